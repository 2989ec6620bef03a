// The per-session capture queue against a stand-in CLI (test/fixtures/fake-yiji.mjs) spawned as a real
// child process: acknowledgement, conflict, a crash before the acknowledgement, abort and timeout.
import assert from 'node:assert/strict'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, it } from 'node:test'
import { createMessage, createUserMessage } from '@deepseek-ai/dsh-llm'
import { Session, SessionId } from '@deepseek-ai/dsh-session'
import { CaptureConflictError, CaptureFailedError, SessionCapture } from '../src/index.js'
import { FIXTURES, tempDir } from './helpers.js'

let temp
let stateFile

function state() {
  return JSON.parse(readFileSync(stateFile, 'utf8'))
}

function setState(patch) {
  writeFileSync(stateFile, JSON.stringify({ ...state(), ...patch }))
}

function recordingLogger() {
  const errors = []
  return { errors, error: (m) => errors.push(m), warn: () => {}, debug: () => {} }
}

function say(session, text) {
  return session.append('user/message', createUserMessage({ content: [{ type: 'text', text }], source: { kind: 'user' } }), { surfaceOp: 'append' })
}

function answer(session, text) {
  return session.append('assistant/message', {
    turn: 1,
    step: 1,
    message: createMessage({ role: 'assistant', content: [{ type: 'text', text }], source: { kind: 'model', provider: 'mock', model: 'mock' } }),
  }, { surfaceOp: 'append' })
}

function capture(session, options = {}) {
  const logger = options.logger ?? recordingLogger()
  return new SessionCapture({
    session,
    instanceId: 'q1',
    command: [process.execPath, join(FIXTURES, 'fake-yiji.mjs'), stateFile],
    timeoutMs: options.timeoutMs ?? 20000,
    logger,
  })
}

beforeEach(() => {
  temp = tempDir('yiji-queue-')
  stateFile = join(temp.dir, 'state.json')
  writeFileSync(stateFile, JSON.stringify({ cursor: -1, events: {}, inserted: [], calls: [], script: [] }))
})

afterEach(() => temp.remove())

describe('SessionCapture', () => {
  it('reads the stored cursor, sends queued messages in seq order and moves on the acknowledgement', async () => {
    const session = Session.create(SessionId('q-ok'))
    const c = capture(session)
    for (const event of [say(session, 'one'), answer(session, 'two'), say(session, 'three')]) c.offer(event)
    await c.drain('event')
    assert.equal(c.cursor, 2)
    assert.deepEqual(Object.keys(state().events), ['dsh:q1:q-ok:0', 'dsh:q1:q-ok:1', 'dsh:q1:q-ok:2'])
    assert.deepEqual(state().calls.map((call) => [call.reason, call.expect]), [['backfill', null], ['event', '-1']])
    assert.equal(c.pending.size, 0)
  })

  it('never runs two calls of one session at once', async () => {
    const session = Session.create(SessionId('q-serial'))
    const c = capture(session)
    const drains = []
    for (let i = 0; i < 4; i += 1) {
      c.offer(say(session, `message ${i}`))
      drains.push(c.drain('event'))
    }
    drains.push(c.drain('pre-summarize'))
    await Promise.all(drains)
    const calls = state().calls
    for (let i = 1; i < calls.length; i += 1) assert.ok(calls[i].started >= calls[i - 1].ended, 'calls overlap')
    assert.equal(c.cursor, 3)
    assert.equal(calls.at(-1).reason, 'pre-summarize') // a boundary is recorded even with nothing new
  })

  it('stops the session on a conflict, logs an error and fails every later drain', async () => {
    const session = Session.create(SessionId('q-conflict'))
    const logger = recordingLogger()
    const c = capture(session, { logger })
    c.offer(say(session, 'mine'))
    await c.drain('event')
    setState({ cursor: 7 }) // another writer with the same instance id moved the cursor
    c.offer(say(session, 'also mine'))
    await assert.rejects(c.drain('event'), CaptureConflictError)
    assert.equal(logger.errors.length, 1)
    assert.match(logger.errors[0], /stored cursor is 7, expected 0/)
    assert.equal(c.offer(say(session, 'ignored')), false)
    await assert.rejects(c.drain('pre-summarize'), CaptureConflictError)
    assert.equal(state().calls.length, 3) // nothing is sent after the conflict
  })

  it('replays the same ids after a crash before the acknowledgement, without duplicates', async () => {
    const session = Session.create(SessionId('q-crash'))
    const c = capture(session)
    c.offer(say(session, 'one'))
    c.offer(answer(session, 'two'))
    setState({ script: ['ok', 'crash-after-commit'] }) // the probe, then the batch commits and dies
    await assert.rejects(c.drain('event'), CaptureFailedError)
    assert.equal(c.cursor, -1)
    assert.equal(c.pending.size, 2)
    c.offer(say(session, 'three'))
    await c.drain('pre-summarize')
    assert.equal(c.cursor, 2)
    const s = state()
    assert.deepEqual(s.inserted, ['dsh:q1:q-crash:0', 'dsh:q1:q-crash:1', 'dsh:q1:q-crash:2'])
    assert.deepEqual(s.calls.slice(1).map((call) => [call.expect, call.behaviour]), [['-1', 'crash-after-commit'], ['-1', 'ok'], ['1', 'ok']])
  })

  it('replays the same ids after a crash before the commit', async () => {
    const session = Session.create(SessionId('q-early'))
    const c = capture(session)
    c.offer(say(session, 'one'))
    setState({ script: ['ok', 'crash-before-commit'] })
    await assert.rejects(c.drain('event'), CaptureFailedError)
    await c.drain('event')
    assert.equal(c.cursor, 0)
    assert.deepEqual(state().inserted, ['dsh:q1:q-early:0'])
  })

  it('kills the CLI on abort and keeps the messages for the next drain', async () => {
    const session = Session.create(SessionId('q-abort'))
    const c = capture(session)
    c.offer(say(session, 'one'))
    setState({ script: ['ok', 'hang'] })
    const abort = new AbortController()
    const pending = c.drain('pre-summarize', abort.signal)
    while (state().calls.length < 2) await new Promise((resolve) => setTimeout(resolve, 50)) // the CLI is running
    abort.abort()
    await assert.rejects(pending, /aborted/)
    assert.equal(c.pending.size, 1)
    assert.equal(state().cursor, -1)
    await c.drain('event')
    assert.equal(c.cursor, 0)
  })

  it('kills a CLI that exceeds the timeout', async () => {
    const session = Session.create(SessionId('q-timeout'))
    const c = capture(session, { timeoutMs: 3000 })
    c.offer(say(session, 'one'))
    setState({ script: ['ok', 'hang'] })
    await assert.rejects(c.drain('event'), /killed by SIGKILL/)
    setState({ script: [] }) // on a slow machine the CLI may have been killed before it read its behaviour
    await c.drain('event')
    assert.equal(c.cursor, 0)
  })

  it('backfills a seeded session from the stored cursor', async () => {
    const seed = Session.create(SessionId('q-seed'))
    say(seed, 'zero')
    answer(seed, 'one')
    say(seed, 'two')
    const resumed = Session.create(SessionId('q-seed'), seed.events)
    setState({ cursor: 0 }) // seq 0 was captured earlier (and maybe deleted since)
    const c = capture(resumed)
    await c.drain('backfill')
    assert.deepEqual(state().inserted, ['dsh:q1:q-seed:1', 'dsh:q1:q-seed:2'])
  })
})
