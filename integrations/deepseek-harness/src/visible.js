/**
 * Which session events are visible messages, and the line each one becomes for `yiji host-ingest`.
 *
 * A visible message is what the person and the model exchanged in the open: a `user/message` whose
 * source kind is `user`, or an `assistant/message` (its text blocks joined), in both cases appended to the
 * surface with `surfaceOp: 'append'`. Compaction checkpoints (plugin-sourced replacement messages with a
 * `replace` surface op), plugin injections, tool calls, tool results and reasoning are not. An interrupted
 * assistant message is visible: the person saw the part that was streamed. Events inherited from a fork
 * parent (below `header.seedLength`) belong to the parent session and are not this session's messages.
 *
 * Pure functions: no I/O, no clock.
 * @module
 */

/**
 * Join the text blocks of a message; other block kinds (reasoning, tool calls, images) are skipped.
 * @param {readonly {type: string, text?: string}[]} content
 * @returns {string}
 */
export function joinText(content) {
  return content
    .filter((block) => block.type === 'text' && typeof block.text === 'string')
    .map((block) => block.text)
    .join('\n')
}

/**
 * The stable yiji event id of a host message: replays of the same message always carry the same id.
 * @param {string} instanceId
 * @param {string} sessionId
 * @param {number} seq
 */
export function eventId(instanceId, sessionId, seq) {
  return `dsh:${instanceId}:${sessionId}:${seq}`
}

/**
 * Map one session event to a capture line, or `null` when it is not a visible message.
 * @param {{type: string, seq: number, time: number, data: any, surfaceOp?: unknown}} event
 * @param {{instanceId: string, sessionId: string, inheritedCount?: number}} where
 * @returns {null | {event_id: string, message_id: string, session: string, seq: number,
 *   role: 'user' | 'assistant', text: string, occurred_at: string}}
 */
export function toVisible(event, { instanceId, sessionId, inheritedCount = 0 }) {
  if (event.seq < inheritedCount || event.surfaceOp !== 'append') return null
  let message
  let role
  if (event.type === 'user/message') {
    if (event.data?.source?.kind !== 'user') return null
    message = event.data
    role = 'user'
  } else if (event.type === 'assistant/message') {
    message = event.data?.message
    role = 'assistant'
  } else {
    return null
  }
  if (!message || !Array.isArray(message.content)) return null
  const text = joinText(message.content)
  if (text.trim() === '') return null
  return {
    event_id: eventId(instanceId, sessionId, event.seq),
    message_id: String(message.id),
    session: sessionId,
    seq: event.seq,
    role,
    text,
    occurred_at: new Date(event.time).toISOString(),
  }
}
