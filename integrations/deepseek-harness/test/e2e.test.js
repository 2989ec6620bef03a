// End to end: the real AgentLoop with a scripted model and a small context window, HostCaptureEngine with
// automatic compaction, and the real `yiji host-ingest` on a temporary database.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { createUserMessage } from '@deepseek-ai/dsh-llm'
import { SessionId } from '@deepseek-ai/dsh-session'
import HostCaptureEngine, { CaptureConflictError, inheritedCount, toVisible } from '../src/index.js'
import { FIXTURES, ScriptedAdapter, loopContext, storedCursor, storedEvents, tempDir, yiji, yijiCommand } from './helpers.js'

const ENGINE = { auto: true, thresholdRatio: 0.5, retainTokens: 50, compactionRetries: 1 }
let temp
let db

before(() => {
  temp = tempDir('yiji-e2e-')
  db = join(temp.dir, 'yiji.db')
})
after(() => temp.remove())

function replies(n, tag) {
  return Array.from({ length: n }, (_, i) => `${tag} reply ${i}: ${'Miso likes the window seat and tuna. '.repeat(3)}`)
}

async function turn(agent, text) {
  agent.followup(createUserMessage({ content: [{ type: 'text', text: `${text} ${'please remember this detail. '.repeat(3)}` }], source: { kind: 'user' } }))
  await agent.whenIdle()
}

function visibleLines(engine, session) {
  const where = { instanceId: engine.instanceId, sessionId: String(session.id), inheritedCount: inheritedCount(session) }
  return session.events.map((e) => toVisible(e, where)).filter(Boolean)
}

/** Wait until everything queued for the session is acknowledged. */
async function settle(engine, session) {
  await engine.captures.get(session).drain('event')
}

/** Record, at the moment each compaction/summary is appended, the cursor stored in yiji. */
function watchSummaries(ctx, instanceId) {
  const seen = []
  ctx.on('session/event', (session, event) => {
    if (event.type === 'compaction/summary') {
      seen.push({ seq: event.seq, cursor: storedCursor(db, instanceId, String(session.id)) })
    }
  })
  return seen
}

describe('HostCaptureEngine in a real agent loop', () => {
  it('commits every visible message before each summary, with both checkpoints', async (t) => {
    const adapter = new ScriptedAdapter(replies(8, 'a'))
    const ctx = await loopContext(adapter)
    try {
      await ctx.plugin(HostCaptureEngine, { ...ENGINE, instanceId: 'e2e-a', command: [...yijiCommand(), '--db', db] })
      const engine = ctx.compaction
      const summaries = watchSummaries(ctx, 'e2e-a')
      const agent = ctx.agentLoop.create(SessionId('s-a'), { provider: 'mock', model: 'mock' })
      for (let i = 0; i < 5; i += 1) await turn(agent, `turn ${i}: my cat is Miso`)
      await settle(engine, agent.session)

      assert.ok(summaries.length >= 1, 'at least one compaction summary landed')
      const lines = visibleLines(engine, agent.session)
      for (const summary of summaries) {
        const before = lines.filter((l) => l.seq < summary.seq)
        assert.ok(before.length > 0)
        assert.ok(summary.cursor >= before.at(-1).seq, `message ${before.at(-1).seq} committed before summary ${summary.seq}`)
      }
      const stored = storedEvents(db, 's-a')
      assert.deepEqual(stored.map((e) => [e.id, e.role, e.text]), lines.map((l) => [l.event_id, l.role, l.text]))
      assert.equal(storedCursor(db, 'e2e-a', 's-a'), lines.at(-1).seq)
      assert.equal(engine.captures.get(agent.session).cursor, lines.at(-1).seq)

      const history = JSON.parse(yiji(db, ['--json', 'checkpoint', 'show', '--session', 's-a', '--history']).out).history
      const reasons = history.map((h) => h.completed[0].split(': ')[1].split(',')[0])
      assert.ok(reasons.filter((r) => r === 'pre-summarize').length >= summaries.length)
      assert.ok(reasons.filter((r) => r === 'pre-return').length >= summaries.length)
      assert.equal(engine.captureWaits.length, adapter.summaryCalls)
      const waits = [...engine.captureWaits].sort((a, b) => a - b)
      t.diagnostic(`capture wait per compaction (ms): ${waits.map((w) => w.toFixed(0)).join(', ')}; median ${waits[Math.floor(waits.length / 2)].toFixed(0)}`)
    } finally {
      await ctx.fiber.dispose()
    }
  })

  it('replays after the CLI is killed mid-acknowledgement, leaving no duplicates', async () => {
    const flag = join(temp.dir, 'lose-ack')
    const ctx = await loopContext(new ScriptedAdapter(replies(6, 'b')))
    try {
      const command = [process.execPath, join(FIXTURES, 'lose-ack.mjs'), flag, ...yijiCommand(), '--db', db]
      await ctx.plugin(HostCaptureEngine, { ...ENGINE, instanceId: 'e2e-b', command })
      const engine = ctx.compaction
      const summaries = watchSummaries(ctx, 'e2e-b')
      const agent = ctx.agentLoop.create(SessionId('s-b'), { provider: 'mock', model: 'mock' })
      await turn(agent, 'turn 0')
      await settle(engine, agent.session)
      writeFileSync(flag, 'after') // the next call commits, then dies before its acknowledgement
      await turn(agent, 'turn 1')
      // Whichever call comes first dies after committing; the next one replays the same ids.
      await settle(engine, agent.session).catch(() => {})
      await settle(engine, agent.session)
      assert.equal(engine.captures.get(agent.session).calls.failed, 1)
      writeFileSync(flag, 'before') // and one dies before it starts
      for (let i = 2; i < 5; i += 1) await turn(agent, `turn ${i}`)
      await settle(engine, agent.session)

      const capture = engine.captures.get(agent.session)
      assert.ok(capture.calls.failed >= 2, `calls: ${JSON.stringify(capture.calls)}`)
      const lines = visibleLines(engine, agent.session)
      const stored = storedEvents(db, 's-b')
      assert.deepEqual(stored.map((e) => e.id), lines.map((l) => l.event_id))
      assert.equal(new Set(stored.map((e) => e.text)).size, stored.length)
      assert.equal(storedCursor(db, 'e2e-b', 's-b'), lines.at(-1).seq)
      for (const summary of summaries) {
        assert.ok(summary.cursor >= lines.filter((l) => l.seq < summary.seq).at(-1).seq)
      }
    } finally {
      await ctx.fiber.dispose()
    }
  })

  it('fails the compaction closed when capture fails', async () => {
    const adapter = new ScriptedAdapter(replies(6, 'c'))
    const ctx = await loopContext(adapter)
    try {
      await ctx.plugin(HostCaptureEngine, { ...ENGINE, instanceId: 'e2e-c', command: [join(temp.dir, 'no-such-yiji')] })
      const agent = ctx.agentLoop.create(SessionId('s-c'), { provider: 'mock', model: 'mock' })
      for (let i = 0; i < 5; i += 1) await turn(agent, `turn ${i}`)
      const events = agent.session.events
      const ends = events.filter((e) => e.type === 'compaction/end')
      assert.ok(ends.length >= 1, 'compaction was attempted')
      assert.ok(ends.every((e) => e.data.error !== undefined), 'every attempt ended in an error')
      assert.equal(events.filter((e) => e.type === 'compaction/summary').length, 0)
      assert.equal(adapter.summaryCalls, 0) // no summary is requested before capture succeeds
    } finally {
      await ctx.fiber.dispose()
    }
  })

  it('stops capture on a conflict when a second engine uses the same instance id', async () => {
    const adapter = new ScriptedAdapter(replies(4, 'd'))
    const ctx = await loopContext(adapter)
    try {
      await ctx.plugin(HostCaptureEngine, { ...ENGINE, auto: false, instanceId: 'e2e-d', command: [...yijiCommand(), '--db', db] })
      const engine = ctx.compaction
      const agent = ctx.agentLoop.create(SessionId('s-d'), { provider: 'mock', model: 'mock' })
      await turn(agent, 'turn 0')
      await settle(engine, agent.session)
      const mine = storedCursor(db, 'e2e-d', 's-d')

      const out = execFileSync(process.execPath, [join(FIXTURES, 'second-engine.mjs'), JSON.stringify([...yijiCommand(), '--db', db]), 'e2e-d', 's-d', '10'], { encoding: 'utf8' })
      const theirs = JSON.parse(out.trim().split('\n').at(-1)).cursor
      assert.ok(theirs > mine)

      await turn(agent, 'turn 1')
      await assert.rejects(settle(engine, agent.session), CaptureConflictError)
      const capture = engine.captures.get(agent.session)
      assert.ok(capture.stopped instanceof CaptureConflictError)
      assert.match(capture.stopped.message, new RegExp(`stored cursor is ${theirs}, expected ${mine}`))
      assert.equal(storedCursor(db, 'e2e-d', 's-d'), theirs) // the first engine wrote nothing more
      // A compaction of the stopped session fails before any summary is requested.
      await assert.rejects(ctx.compaction.compactNow(agent, new AbortController().signal))
      assert.equal(adapter.summaryCalls, 0)
    } finally {
      await ctx.fiber.dispose()
    }
  })

  it('does not bring back events deleted in yiji when a session is resumed', async () => {
    const first = await loopContext(new ScriptedAdapter(replies(4, 'e')))
    let seed
    let deleted
    try {
      await first.plugin(HostCaptureEngine, { ...ENGINE, auto: false, instanceId: 'e2e-e', command: [...yijiCommand(), '--db', db] })
      const agent = first.agentLoop.create(SessionId('s-e'), { provider: 'mock', model: 'mock' })
      await turn(agent, 'my secret is 4711, forget it later')
      await turn(agent, 'turn 1')
      await settle(first.compaction, agent.session)
      seed = agent.session.events
      deleted = visibleLines(first.compaction, agent.session)[0]
    } finally {
      await first.fiber.dispose()
    }
    assert.equal(yiji(db, ['delete', '--event', deleted.event_id, '--yes']).code, 0)

    const second = await loopContext(new ScriptedAdapter(replies(4, 'e2')))
    try {
      await second.plugin(HostCaptureEngine, { ...ENGINE, auto: false, instanceId: 'e2e-e', command: [...yijiCommand(), '--db', db] })
      const { agent } = await second.agentLoop.createAgent(second, { sessionId: SessionId('s-e'), seed, agentOptions: { provider: 'mock', model: 'mock' } })
      await turn(agent, 'turn 2 after resume')
      await settle(second.compaction, agent.session)
      const lines = visibleLines(second.compaction, agent.session)
      const ids = storedEvents(db, 's-e').map((e) => e.id)
      assert.ok(!ids.includes(deleted.event_id), 'the deleted event stays deleted')
      assert.deepEqual(ids, lines.filter((l) => l.event_id !== deleted.event_id).map((l) => l.event_id))
      assert.equal(storedCursor(db, 'e2e-e', 's-e'), lines.at(-1).seq)
    } finally {
      await second.fiber.dispose()
    }
  })
})
