// The visible-message mapping and the session-log reader over real DeepSeek Harness Session logs: seeds,
// forks, compaction checkpoints, plugin injections, reasoning and interrupted messages.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Context } from '@deepseek-ai/cordis'
import { BasicCompactionEngine } from '@deepseek-ai/dsh-compaction-basic'
import { createMessage, createUserMessage } from '@deepseek-ai/dsh-llm'
import SessionStore, { Session, SessionId } from '@deepseek-ai/dsh-session'
import { SESSION_LOG_API, eventsAfter, inheritedCount, toVisible } from '../src/index.js'
import { ScriptedAdapter, loopContext } from './helpers.js'

const where = (session) => ({ instanceId: 'v1', sessionId: String(session.id), inheritedCount: inheritedCount(session) })
const visible = (session) => session.events.map((e) => toVisible(e, where(session))).filter(Boolean)

function say(session, text, source = { kind: 'user' }) {
  return session.append('user/message', createUserMessage({ content: [{ type: 'text', text }], source }), { surfaceOp: 'append' })
}

function answer(session, content, extra = {}) {
  return session.append('assistant/message', {
    turn: 1,
    step: 1,
    message: createMessage({ role: 'assistant', content, source: { kind: 'model', provider: 'mock', model: 'mock' } }),
    ...extra,
  }, { surfaceOp: 'append' })
}

describe('toVisible', () => {
  it('maps user and assistant messages to capture lines with stable ids', () => {
    const session = Session.create(SessionId('v-basic'))
    const user = say(session, '我的猫叫米索')
    session.append('turn/start', { turn: 1 })
    const reply = answer(session, [
      { type: 'reasoning', text: 'private chain of thought' },
      { type: 'text', text: 'Miso is' },
      { type: 'text', text: 'a fine name.' },
    ])
    assert.deepEqual(visible(session), [
      {
        event_id: 'dsh:v1:v-basic:0',
        message_id: String(user.data.id),
        session: 'v-basic',
        seq: 0,
        role: 'user',
        text: '我的猫叫米索',
        occurred_at: new Date(user.time).toISOString(),
      },
      {
        event_id: 'dsh:v1:v-basic:2',
        message_id: String(reply.data.message.id),
        session: 'v-basic',
        seq: 2,
        role: 'assistant',
        text: 'Miso is\na fine name.',
        occurred_at: new Date(reply.time).toISOString(),
      },
    ])
  })

  it('skips plugin injections and text-less replies, keeps interrupted replies', () => {
    const session = Session.create(SessionId('v-kinds'))
    say(session, 'injected reminder', { kind: 'plugin', plugin: 'reminder' })
    answer(session, [{ type: 'reasoning', text: 'thinking only' }])
    answer(session, [{ type: 'text', text: 'half a sent' }], { interrupted: true })
    answer(session, [{ type: 'text', text: '   ' }])
    assert.deepEqual(visible(session).map((l) => [l.seq, l.role, l.text]), [[2, 'assistant', 'half a sent']])
  })

  it('captures a replayed seed, but not what a fork inherited from its parent', async () => {
    const ctx = new Context()
    await ctx.plugin(SessionStore)
    try {
      const parent = ctx.sessions.create(SessionId('v-parent'))
      say(parent, 'parent message')
      answer(parent, [{ type: 'text', text: 'parent reply' }])
      const child = ctx.sessions.fork(parent, undefined, SessionId('v-child'))
      say(child, 'child message')
      assert.equal(inheritedCount(child), 2)
      assert.equal(child.events[2].type, 'session/end-seed')
      assert.deepEqual(visible(child).map((l) => [l.event_id, l.text]), [['dsh:v1:v-child:3', 'child message']])

      const replayed = Session.create(SessionId('v-parent'), parent.events)
      assert.equal(inheritedCount(replayed), 0)
      assert.deepEqual(visible(replayed).map((l) => l.text), ['parent message', 'parent reply'])
    } finally {
      await ctx.fiber.dispose()
    }
  })

  it('never maps compaction checkpoints from a real compaction', async () => {
    class FixedSummary extends BasicCompactionEngine {
      async summarize() {
        return { summary: [{ type: 'text', text: 'CHECKPOINT SUMMARY' }], provider: 'mock', model: 'stub' }
      }
    }
    const replies = Array.from({ length: 6 }, (_, i) => `reply ${i} ${'about the cat '.repeat(8)}`)
    const ctx = await loopContext(new ScriptedAdapter(replies))
    try {
      await ctx.plugin(FixedSummary, { auto: true, thresholdRatio: 0.5, retainTokens: 50 })
      const agent = ctx.agentLoop.create(SessionId('v-compacted'), { provider: 'mock', model: 'mock' })
      for (let i = 0; i < 5; i += 1) {
        agent.followup(createUserMessage({ content: [{ type: 'text', text: `turn ${i} ${'words '.repeat(10)}` }], source: { kind: 'user' } }))
        await agent.whenIdle()
      }
      const events = agent.session.events
      const checkpoints = events.filter((e) => e.type === 'user/message' && typeof e.surfaceOp === 'object')
      assert.ok(checkpoints.length > 0, 'a compaction checkpoint landed')
      const lines = visible(agent.session)
      assert.equal(lines.filter((l) => l.role === 'user').length, 5)
      assert.equal(lines.filter((l) => l.role === 'assistant').length, 5)
      assert.ok(lines.every((l) => !l.text.includes('CHECKPOINT SUMMARY')))
      const bySeq = new Map(events.map((e) => [e.seq, e]))
      assert.ok(lines.every((l) => bySeq.get(l.seq).surfaceOp === 'append'))
    } finally {
      await ctx.fiber.dispose()
    }
  })
})

describe('session reader', () => {
  it('reads the log past a cursor with the pinned API', () => {
    const session = Session.create(SessionId('v-reader'))
    for (const text of ['a', 'b', 'c']) say(session, text)
    assert.match(SESSION_LOG_API, /Session#events .*0\.1\.0-rc\.8/)
    assert.deepEqual(eventsAfter(session, -1).map((e) => e.seq), [0, 1, 2])
    assert.deepEqual(eventsAfter(session, 1).map((e) => e.seq), [2])
    assert.deepEqual(eventsAfter(session, 2), [])
  })
})
