// The shipped cordis.patch.yml through the real Loader and Include: applied over a profile that mounts the
// basic engine as `compaction-basic`, it yields HostCaptureEngine as the one `ctx.compaction`.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterEach, describe, it } from 'node:test'
import yaml from 'js-yaml'
import { Context } from '@deepseek-ai/cordis'
import Include, { entryListSchema } from '@deepseek-ai/cordis-plugin-include'
import Loader from '@deepseek-ai/cordis-plugin-loader'
import { BasicCompactionEngine } from '@deepseek-ai/dsh-compaction-basic'
import LlmRuntime from '@deepseek-ai/dsh-llm'
import SessionStore from '@deepseek-ai/dsh-session'
import TokenMeter from '@deepseek-ai/dsh-token-meter'
import HostCaptureEngine from '../src/index.js'
import { PACKAGE_ROOT, tempDir } from './helpers.js'

const manifest = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8'))
let context
let temp

afterEach(async () => {
  await context?.fiber.dispose()
  context = undefined
  temp?.remove()
  delete process.env.YIJI_DSH_INSTANCE_ID
})

/** A host profile like the dsh-base bundle's, with our bundle patch applied as Include patches. */
async function loadProfile(patches) {
  temp = tempDir('yiji-loader-')
  const configPath = join(temp.dir, 'cordis.yml')
  await writeFile(configPath, [
    '- id: llm',
    "  name: '@deepseek-ai/dsh-llm'",
    '- id: session',
    "  name: '@deepseek-ai/dsh-session'",
    '- id: token-meter',
    "  name: '@deepseek-ai/dsh-token-meter'",
    '- id: compaction-basic',
    "  name: '@deepseek-ai/dsh-compaction-basic'",
    '',
  ].join('\n'))
  context = new Context()
  context.baseUrl = pathToFileURL(temp.dir).href + '/'
  await context.plugin(Loader)
  context.loader.builtins.include = Include
  const modules = new Map([
    ['@deepseek-ai/dsh-llm', LlmRuntime],
    ['@deepseek-ai/dsh-session', SessionStore],
    ['@deepseek-ai/dsh-token-meter', TokenMeter],
    ['@deepseek-ai/dsh-compaction-basic', BasicCompactionEngine],
    [manifest.name, HostCaptureEngine],
  ])
  context.loader.internal = {
    version: 'v2',
    async import(specifier) {
      if (!modules.has(specifier)) throw new Error(`unexpected Loader import: ${specifier}`)
      return modules.get(specifier)
    },
  }
  await context.loader.create({ name: 'cordis:include', config: { path: pathToFileURL(configPath).href, patches } })
  await context.loader.await()
  return context
}

function shippedPatch() {
  assert.equal(manifest.dsh.bundle.patch, './cordis.patch.yml')
  return yaml.load(readFileSync(join(PACKAGE_ROOT, manifest.dsh.bundle.patch), 'utf8'), { schema: entryListSchema })
}

describe('cordis.patch.yml', () => {
  it('replaces the basic engine row with HostCaptureEngine', async () => {
    process.env.YIJI_DSH_INSTANCE_ID = 'loader-test'
    const loaded = await loadProfile(shippedPatch())
    const compaction = loaded.get('compaction')
    assert.ok(compaction instanceof HostCaptureEngine)
    assert.equal(compaction.instanceId, 'loader-test')
    assert.deepEqual(compaction.command, ['yiji'])
    assert.equal(compaction.config.auto, true) // the base engine's own defaults still apply
    const entries = [...loaded.loader.entries()]
    assert.deepEqual(entries.filter((e) => e.fiber === undefined && !e.disabled).map((e) => e.options.name), [])
    assert.deepEqual(entries.filter((e) => e.disabled).map((e) => e.options.id), ['compaction-basic'])
  })

  it('passes the base engine keys through and still rejects unknown ones', async () => {
    const [disable, insert] = shippedPatch()
    const row = insert.insert[0]
    const tuned = [disable, { insert: [{ ...row, config: { instanceId: 'tuned', thresholdRatio: 0.5, retainRatio: 0.125, auto: false } }] }]
    const loaded = await loadProfile(tuned)
    assert.ok(loaded.get('compaction') instanceof HostCaptureEngine)
    const { thresholdRatio, retainRatio, auto } = loaded.get('compaction').config
    assert.deepEqual({ thresholdRatio, retainRatio, auto }, { thresholdRatio: 0.5, retainRatio: 0.125, auto: false })
    await context.fiber.dispose()
    context = new Context()
    await context.plugin(LlmRuntime)
    await context.plugin(SessionStore)
    await context.plugin(TokenMeter)
    await assert.rejects(async () => { await context.plugin(HostCaptureEngine, { instanceId: 'x', models: {} }) }, /unknown key "models"/)
    await assert.rejects(async () => { await context.plugin(HostCaptureEngine, {}) }, /instanceId/)
  })

  it('allows one installation per instance id in a process', async () => {
    context = new Context()
    await context.plugin(LlmRuntime)
    await context.plugin(SessionStore)
    await context.plugin(TokenMeter)
    await context.plugin(HostCaptureEngine, { instanceId: 'only-once' })
    const other = new Context()
    await other.plugin(LlmRuntime)
    await other.plugin(SessionStore)
    await other.plugin(TokenMeter)
    try {
      await assert.rejects(async () => { await other.plugin(HostCaptureEngine, { instanceId: 'only-once' }) }, /already installed/)
      await context.fiber.dispose()
      context = other
      await other.plugin(HostCaptureEngine, { instanceId: 'only-once' }) // free again once unloaded
      assert.ok(other.get('compaction') instanceof HostCaptureEngine)
    } finally {
      if (context !== other) await other.fiber.dispose()
    }
  })
})
