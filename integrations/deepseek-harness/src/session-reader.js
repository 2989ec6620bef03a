/**
 * The one place that reads a session's stored log (backfill after a resume, replay or fork).
 *
 * DeepSeek Harness 0.1.0-rc.8 exposes the whole log as the cached, frozen `session.events` getter, and the
 * fork boundary as `session.header.seedLength`. Later lines replace the getter with the bounded snapshot API
 * `session.snapshotEvents(fromSeq, toSeqExclusive)` (itself deprecated in favour of
 * `ctx.sessionQuery.observeSession()`), and the fork boundary with `inheritedEventCount`. Moving to one of
 * them is a change to this file alone: see "Upgrading deliberately" in the README.
 * @module
 */

/** Which upstream API this reader uses, reported in logs and checked by the tests. */
export const SESSION_LOG_API = 'Session#events (DeepSeek Harness 0.1.0-rc.8)'

/**
 * Events of `session` with `seq > cursor`, oldest first.
 * @param {{events: readonly {seq: number}[]}} session
 * @param {number} cursor - the highest host seq already captured (-1 for none).
 * @returns {readonly object[]}
 */
export function eventsAfter(session, cursor) {
  const events = session.events
  if (!Array.isArray(events)) {
    throw new TypeError(`session log API not found: this adapter reads ${SESSION_LOG_API}`)
  }
  // `seq` equals the log position (contiguous from 0), so the tail is a slice.
  return events.slice(Math.max(0, cursor + 1))
}

/**
 * How many leading events were inherited from a fork parent (0 for a session that was not forked).
 * @param {{header?: {seedLength?: number}}} session
 */
export function inheritedCount(session) {
  return session.header?.seedLength ?? 0
}
