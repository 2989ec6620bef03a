/**
 * Per-session capture: visible messages wait here until `yiji host-ingest` acknowledges them.
 *
 * Every session has one serialized promise chain, so CLI calls for a session never overlap and messages are
 * sent in seq order. The in-memory cursor moves only on an acknowledgement. When an acknowledgement is lost
 * (the CLI crashed, timed out or was aborted), the messages stay queued and the next drain sends them again
 * with the same stable ids from the same expected cursor; if the lost call had in fact committed, the CLI
 * answers with a conflict whose cursor is exactly the lost call's target, which is recognised as this
 * capture's own commit. Any other conflict means a competing writer: capture of the session stops for good,
 * an error is logged, and every later drain (and so every compaction of the session) fails.
 * @module
 */

import { runHostIngest } from './ingest.js'
import { eventsAfter, inheritedCount } from './session-reader.js'
import { toVisible } from './visible.js'

/** Capture of the session stopped because another writer moved its cursor. */
export class CaptureConflictError extends Error {
  name = 'CaptureConflictError'
}

/** A capture call failed; the messages stay queued and are replayed with the same ids. */
export class CaptureFailedError extends Error {
  name = 'CaptureFailedError'
}

const BOUNDARY = new Set(['pre-summarize', 'pre-return'])

export class SessionCapture {
  /**
   * @param {object} options
   * @param {{id: string, events: readonly object[], header?: object}} options.session
   * @param {string} options.instanceId
   * @param {readonly string[]} options.command
   * @param {number} options.timeoutMs
   * @param {{error: Function, warn: Function}} options.logger
   * @param {typeof runHostIngest} [options.run]
   */
  constructor({ session, instanceId, command, timeoutMs, logger, run = runHostIngest }) {
    this.session = session
    this.sessionId = String(session.id)
    this.instanceId = instanceId
    this.command = command
    this.timeoutMs = timeoutMs
    this.logger = logger
    this.run = run
    /** Highest acknowledged host seq; `null` until the stored cursor has been read. */
    this.cursor = null
    /** @type {Map<number, object>} queued lines by seq */
    this.pending = new Map()
    /** @type {null | {expect: number, target: number}} a call whose acknowledgement was lost */
    this.unacknowledged = null
    /** @type {CaptureConflictError | null} */
    this.stopped = null
    this.chain = Promise.resolve()
    /** @type {ReturnType<typeof setTimeout> | null} a scheduled event drain */
    this.timer = null
    /** CLI calls made, by outcome (for tests and diagnostics). */
    this.calls = { ok: 0, conflict: 0, failed: 0 }
  }

  /** Map a live event and queue it when it is a visible message. */
  offer(event) {
    if (this.stopped) return false
    const line = toVisible(event, {
      instanceId: this.instanceId,
      sessionId: this.sessionId,
      inheritedCount: inheritedCount(this.session),
    })
    if (line === null) return false
    this.pending.set(line.seq, line)
    return true
  }

  /**
   * Drain after `delayMs`, unless a drain is already scheduled. Live messages are captured shortly after
   * they arrive; a compaction that starts meanwhile takes them along in its own call instead of waiting for
   * an extra process.
   * @param {number} delayMs
   * @param {(error: Error) => void} onError
   */
  schedule(delayMs, onError) {
    if (this.timer !== null || this.stopped) return
    this.timer = setTimeout(() => {
      this.timer = null
      this.drain('event').catch(onError)
    }, delayMs)
    this.timer.unref?.()
  }

  /** Cancel a scheduled drain (the engine is unloading). */
  cancel() {
    if (this.timer !== null) clearTimeout(this.timer)
    this.timer = null
  }

  /**
   * Queue a drain on this session's chain; resolves when everything queued before it is acknowledged.
   * @param {'event' | 'pre-summarize' | 'pre-return' | 'backfill'} reason
   * @param {AbortSignal} [signal]
   */
  drain(reason, signal) {
    const next = this.chain.then(() => this._drain(reason, signal))
    this.chain = next.catch(() => {})
    return next
  }

  async _drain(reason, signal) {
    if (this.stopped) throw this.stopped
    if (this.cursor === null) {
      await this._readCursor(signal)
      this._backfill()
    } else if (reason === 'backfill') {
      this._backfill()
    }
    for (;;) {
      const expect = this.cursor
      const lines = [...this.pending.values()].filter((l) => l.seq > expect).sort((a, b) => a.seq - b.seq)
      if (lines.length === 0 && !BOUNDARY.has(reason)) return
      const outcome = await this.run({
        command: this.command,
        instanceId: this.instanceId,
        sessionId: this.sessionId,
        expectCursor: expect,
        reason,
        lines,
        timeoutMs: this.timeoutMs,
        signal,
      })
      this.calls[outcome.kind] += 1
      if (outcome.kind === 'ok') {
        this._acknowledged(outcome.cursor)
        return
      }
      if (outcome.kind === 'failed') {
        this.unacknowledged = { expect, target: lines.at(-1)?.seq ?? expect }
        throw new CaptureFailedError(
          `yiji host-ingest failed for session ${this.sessionId} (${outcome.reason}); ${lines.length} message(s) stay queued`,
        )
      }
      const lost = this.unacknowledged
      if (outcome.conflict === 'cursor' && lost && lost.expect === expect && lost.target === outcome.cursor) {
        this._acknowledged(outcome.cursor) // the call whose acknowledgement was lost had committed
        continue
      }
      this.stopped = new CaptureConflictError(
        `yiji capture of session ${this.sessionId} stopped: ${outcome.conflict === 'event'
          ? 'an event id is stored with a different payload'
          : `the stored cursor is ${outcome.cursor}, expected ${expect}`} (is another installation using instance id "${this.instanceId}"?)`,
      )
      this.logger.error(this.stopped.message)
      throw this.stopped
    }
  }

  _acknowledged(cursor) {
    this.cursor = cursor
    this.unacknowledged = null
    for (const seq of this.pending.keys()) if (seq <= cursor) this.pending.delete(seq)
  }

  async _readCursor(signal) {
    const outcome = await this.run({
      command: this.command,
      instanceId: this.instanceId,
      sessionId: this.sessionId,
      expectCursor: null,
      reason: 'backfill',
      lines: [],
      timeoutMs: this.timeoutMs,
      signal,
    })
    if (outcome.kind !== 'ok') {
      throw new CaptureFailedError(`could not read the yiji capture cursor of session ${this.sessionId} (${outcome.reason ?? outcome.kind})`)
    }
    this._acknowledged(outcome.cursor)
  }

  /** Queue every visible message of the stored log past the cursor (seed events are never published live). */
  _backfill() {
    for (const event of eventsAfter(this.session, this.cursor)) this.offer(event)
  }
}
