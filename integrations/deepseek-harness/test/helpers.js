/**
 * Shared test wiring: the real DeepSeek Harness services, a scripted LLM adapter, and the real yiji CLI.
 */

import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Context } from '@deepseek-ai/cordis'
import AgentRegistry from '@deepseek-ai/dsh-agent'
import AgentLoop from '@deepseek-ai/dsh-agent-loop'
import LlmRuntime, { LlmAdapter } from '@deepseek-ai/dsh-llm'
import SessionStore from '@deepseek-ai/dsh-session'
import SystemPrompt from '@deepseek-ai/dsh-system-prompt'
import TokenMeter from '@deepseek-ai/dsh-token-meter'
import ToolRuntime from '@deepseek-ai/dsh-tools'

export const PACKAGE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..')
export const FIXTURES = join(PACKAGE_ROOT, 'test', 'fixtures')

/**
 * The yiji command to test against: `$YIJI_COMMAND` (a JSON argument list, set by the Python test that runs
 * this suite), else the repository's own virtual environment.
 */
export function yijiCommand() {
  if (process.env.YIJI_COMMAND) return JSON.parse(process.env.YIJI_COMMAND)
  const venv = resolve(PACKAGE_ROOT, '..', '..', '.venv', 'bin', 'yiji')
  if (existsSync(venv)) return [venv]
  throw new Error('set YIJI_COMMAND to a JSON list such as ["yiji"], or run `uv sync` in the repository')
}

/** A temporary directory, removed by the returned function. */
export function tempDir(prefix = 'yiji-dsh-') {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) }
}

/** Run the real yiji CLI synchronously; returns {code, out, err}. */
export function yiji(db, args, input = '') {
  const [program, ...leading] = yijiCommand()
  const result = spawnSync(program, [...leading, '--db', db, ...args], { input, encoding: 'utf8' })
  return { code: result.status, out: result.stdout, err: result.stderr }
}

/** The stored cursor of a session, read through the CLI's empty-stdin probe. */
export function storedCursor(db, instanceId, sessionId) {
  const result = yiji(db, ['host-ingest', '--instance', instanceId, '--session', sessionId])
  if (result.code !== 0) throw new Error(`probe failed: ${result.err}`)
  return JSON.parse(result.out).cursor
}

/** The events yiji stores for a session, oldest first. */
export function storedEvents(db, sessionId) {
  const result = yiji(db, ['--json', 'event', 'list', '--session', sessionId, '--limit', '1000'])
  if (result.code !== 0) throw new Error(`event list failed: ${result.err}`)
  return JSON.parse(result.out).events
}

/** Text of the trailing message of a request (the summarizer's instruction sits there). */
function trailingText(options) {
  return options.messages.at(-1)?.content.map((b) => (b.type === 'text' ? b.text : '')).join('') ?? ''
}

/**
 * A scripted model: conversation turns answer with the next scripted reply; a compaction call (recognised
 * by the base engine's instruction) answers with a short summary.
 */
export class ScriptedAdapter extends LlmAdapter {
  constructor(replies, contextWindow = 400) {
    super()
    this.replies = [...replies]
    this.contextWindow = contextWindow
    this.summaryCalls = 0
    this.turnCalls = 0
  }

  resolveModel(provider, model) {
    return Promise.resolve({ provider, id: model, name: model, context: { contextWindow: this.contextWindow } })
  }

  async * stream(options) {
    let text
    if (trailingText(options).includes('acting as a compaction engine')) {
      this.summaryCalls += 1
      text = `S${this.summaryCalls}`
    } else {
      this.turnCalls += 1
      text = this.replies.shift() ?? 'ok'
    }
    yield { type: 'block-start', index: 0, blockType: 'text' }
    yield { type: 'block-end', index: 0, block: { type: 'text', text } }
    yield { type: 'finish', reason: { kind: 'stop' } }
  }
}

/** A context with the real loop's prerequisite services, the loop, the token meter and a scripted model. */
export async function loopContext(adapter) {
  const ctx = new Context()
  await ctx.plugin(LlmRuntime)
  await ctx.plugin(SessionStore)
  await ctx.plugin(SystemPrompt, {})
  await ctx.plugin(ToolRuntime, {})
  await ctx.plugin(AgentRegistry)
  await ctx.plugin(AgentLoop, { agents: [] })
  await ctx.plugin(TokenMeter)
  ctx.llm.registerAdapter(['mock'], adapter)
  return ctx
}
