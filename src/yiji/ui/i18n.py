"""The review UI's words in Chinese and English, chosen from the browser's ``Accept-Language``: its own,
and the words it shares with the CLI (:func:`yiji.domain.wording.shared_words`)."""

from __future__ import annotations

import re

from yiji.domain.wording import counted, shared_words

__all__ = ["KIND_NAMES", "LANGUAGES", "MESSAGES", "counts_of", "name_of", "persona_note", "pick_language"]

LANGUAGES = ("zh", "en")

_UI_WORDS: dict[str, dict[str, str]] = {
    "en": {
        "app": "yiji",
        "tagline": "local, auditable memory",
        "nav.memories": "Memories",
        "nav.recall": "Recall",
        "nav.persona": "Persona & emotion",
        "nav.review": "Review",
        "review.title": "Review queue",
        "review.to_extract": (
            "{n} conversation turns have no memories yet: yiji extraction run sends them to the extraction "
            "endpoint (docs/extraction.md)."
        ),
        "review.empty": (
            "Nothing waiting for review. Extraction proposes memories here when "
            '[extraction] review is "facts" or "all".'
        ),
        "review.explain": (
            "Proposed memories are not remembered until accepted: recall and resume ignore them, "
            "and their source stays searchable as it was said."
        ),
        "review.keys": "Keys: a accept · r reject · e edit · s or j skip",
        "review.skip": "Skip",
        "review.save": "Save",
        "review.save_accept": "Save and accept",
        "review.note": "Note (why)",
        "review.context": "Conversation around it",
        "review.this_turn": "source",
        "review.done": "{action}: {text}",
        "review.skipped_all": "You skipped the rest of the queue.",
        "review.restart": "Start again from the oldest",
        "review.drop_key": "no key",
        "review.here": (
            "This memory is a proposal: it is not remembered until accepted. Decide it here or in the "
            "review queue."
        ),
        "review.rejected_here": "This proposal was rejected: it is kept for audit only, never recalled.",
        "review.queue": "Review queue",
        "recall.proposal_waits": "raw event: a memory proposed from it waits for review",
        "scope": "Scope",
        "switch": "Switch",
        "filters": "Filters",
        "view": "View",
        "view.current": "Current",
        "view.history": "History",
        "view.revoked": "Revoked",
        "kind": "Kind",
        "basis": "Basis",
        "any": "any",
        "fact_key": "Fact key",
        "subject": "Subject",
        "text": "Text contains",
        "since": "Valid from",
        "until": "Valid before",
        "as_of": "As of",
        "apply": "Apply",
        "reset": "Reset",
        "showing": "Showing {start}–{end} of {total}",
        "none": "No memories match.",
        "prev": "← Previous",
        "next": "Next →",
        "open": "Open",
        "faded.gist": "faded to its gist",
        "faded.topic_cues": "faded to topic cues",
        "expired": "expired",
        "future": "not yet valid",
        "valid": "Valid",
        "until_now": "now",
        "confidence": "confidence",
        "memory": "Memory",
        "who": "Said by",
        "session": "session",
        "occurred": "occurred",
        "amended": "amended by a correction",
        "quote_here": "The quote is highlighted below.",
        "quote_elsewhere": "The quote is on another page of this text:",
        "quote_missing": "The quote was not found in the source text.",
        "go_quote": "go to the quote",
        "chars": "characters {start}–{end} of {total}",
        "co_derived": "Derived from the same event",
        "relations": "Relations",
        "lineage": "Correction lineage",
        "lineage.none": "This memory has not been corrected.",
        "lineage.mistaken": "mistaken",
        "lineage.corrected": "correction",
        "lineage.this": "this memory",
        "timeline": "Timeline of",
        "timeline.none": "Not a single-valued fact: no timeline.",
        "correct": "Correct this memory",
        "correct.wrong": "This was wrong",
        "correct.wrong.body": (
            "Use this form when the memory was never true: it was misheard, misread or misattributed. "
            "The statement becomes a new correction event, this memory is revoked (it leaves current and "
            "past views alike), and the corrected memory takes its place from the same start."
        ),
        "correct.changed": "This changed",
        "correct.changed.body": (
            "If it was true then and is no longer (they moved, changed their mind), do not correct it: "
            "submit the new fact as an ordinary event (yiji event submit, or through your chat host). "
            "The earlier fact stays in history and its validity ends where the new one starts."
        ),
        "correct.already": "This memory was already corrected; correct its correction instead.",
        "statement": "What is actually true (required)",
        "statement.help": "Stored as the text of a new correction event.",
        "optional": "Optional fields (default: from the statement and the mistaken memory)",
        "f.text": "Memory text (default: the statement)",
        "f.quote": "Quote from the statement (default: the whole statement)",
        "f.valid_at": "Valid from (ISO 8601 with timezone; default: the mistaken memory's start)",
        "f.confidence": "Confidence (0–1)",
        "f.valence": "Valence (−1–1)",
        "f.arousal": "Arousal (0–1)",
        "f.gist": "Gist",
        "f.role": "Who states it",
        "f.session": "Session (default: the mistaken memory's)",
        "f.occurred_at": "Occurred at (default: now)",
        "submit.correct": "Save correction",
        "delete": "Delete permanently",
        "delete.preview": "Deletion preview (dry run: nothing has been deleted yet)",
        "delete.explain": (
            "Permanent deletion removes the source event, every memory derived from it and the whole "
            "correction lineage, with their search entries, vectors, cues and relation edges. Memories "
            "only related to them stay. Checkpoints of this scope are invalidated. Exported archives, "
            "backups and remote logs are not changed. This cannot be undone."
        ),
        "delete.events": "Events that go",
        "delete.memories": "Memories that go",
        "delete.counts": "Also removed: {relations}, {embeddings}, {cues}; {checkpoints} invalidated.",
        "delete.type": "Type {word} to confirm",
        "delete.word": "delete",
        "delete.mismatch": "The confirmation did not match; nothing was deleted.",
        "delete.done": "Deleted {events} and {memories}.",
        "delete.button": "Delete permanently",
        "back": "Back to memories",
        "recall.title": "Recall",
        "recall.placeholder": "Ask what yiji remembers…",
        "recall.search": "Search",
        "recall.none": "No evidence found for this query.",
        "recall.why": "Why",
        "recall.raw": "raw event (no derived memory); original text, not a checked fact",
        "recall.context": "The turns beside it",
        "recall.score": "score",
        "persona.title": "Persona versions",
        "persona.readonly": "Read-only here: personas change through the CLI ({yiji} persona set, rollback).",
        "persona.version": "Version {version}",
        "emotion.title": "Current emotion",
        "emotion.none": "No current role emotion (none expressed, or it has decayed).",
        "emotion.valence": "valence",
        "emotion.arousal": "arousal",
        "emotion.factor": "decay factor {factor} (half-life {hours} h) since {at}",
        "error": "Something is not right",
        "error.forbidden": "This page needs the link yiji ui printed (with its token).",
        "error.host": "Refused: this server answers only to 127.0.0.1 or localhost.",
        "error.csrf": (
            "Refused: the form's security token is missing or stale. Reload the page and try again."
        ),
        "error.notfound": "Not found in this scope.",
        "invalid": "Not saved",
        "nav.conversations": "Conversations",
        "conversations.title": "Conversations",
        "conversations.none": "No conversation in this scope yet.",
        "conversations.showing": "Sessions {start}–{end} of {total}",
        "conversations.session": "Session",
        "conversations.events": "Events",
        "conversations.first": "First",
        "conversations.last": "Last",
        "conversations.opening": "How it began",
        "conversation.title": "Conversation",
        "conversation.all": "All conversations",
        "conversation.showing": "Events {start}–{end} of {total}, in the order they were stored",
        "conversation.derived": "Memories from this event",
        "conversation.nothing": "No memory derived from this event.",
        "conversation.cut": "{count} more characters are not shown here.",
        "conversation.in": "See it in the conversation",
        "flash.corrected": "Correction saved: the mistaken memory is revoked and this one takes its place.",
        "flash.dismiss": "Dismiss",
        "flash.accepted": "Accepted: the memory is remembered now.",
        "flash.rejected": "Rejected: it will not be remembered, and is kept for audit only.",
        "flash.edited": "Edited: the proposal still waits for review.",
        "recall.as_of": "As of",
        "recall.as_of.help": "what held on that day (empty: now)",
        "recall.history": "Include history (expired and not yet valid facts)",
        "why.score": "score",
        "why.parts": "What counted",
        "why.factors": "Adjusted by",
        "why.lexical": "word match",
        "why.cue": "cue",
        "why.fact": "the fact asked about",
        "why.diversity": "another hit of the same conversation",
        "why.time": "the time asked about",
        "why.speaker": "said by the assistant (the question is about you)",
        "why.related": "related memory",
        "why.cosine": "similar meaning",
        "why.neighbour": "nearby turns",
        "why.session": "same conversation",
        "why.basis": "source",
        "why.confidence": "confidence",
        "why.freshness": "freshness",
        "why.matched": "Matched words",
        "why.in_source": "In its source conversation only (not in the memory's words)",
        "why.uninformative": "Common words (count only a little)",
        "why.context_of": "Shown as context of",
        "why.weak": "Weak match: below the bar for a hit, shown last.",
        "how.lexical": "word match",
        "how.cue": "cue",
        "how.fact": "the fact asked about",
        "how.related": "related memory",
        "how.vector": "similar meaning",
        "how.weak": "weak match",
        "persona.note.default": "neutral default",
        "persona.note.rollback": "rolled back to version {version}",
        "emotion.memory": "expressed in",
    },
    "zh": {
        "app": "忆迹",
        "tagline": "本地、可审计的记忆",
        "nav.memories": "记忆",
        "nav.recall": "回忆检索",
        "nav.persona": "人设与情绪",
        "nav.review": "待审",
        "review.title": "待审队列",
        "review.to_extract": (
            "有 {n} 条对话还没有抽取记忆：yiji extraction run 会把它们发给抽取接口（见 docs/extraction.md）。"
        ),
        "review.empty": (
            '没有待审的记忆。当 [extraction] review 设为 "facts" 或 "all" 时，'
            "自动抽取的记忆会先在这里等待确认。"
        ),
        "review.explain": (
            "待审的记忆在确认之前不算记住：回忆检索和会话恢复都不会用它，原话仍可照原样检索到。"
        ),
        "review.keys": "快捷键：a 确认 · r 驳回 · e 修改 · s 或 j 跳过",
        "review.skip": "跳过",
        "review.save": "保存",
        "review.save_accept": "保存并确认",
        "review.note": "备注（原因）",
        "review.context": "前后对话",
        "review.this_turn": "出处",
        "review.done": "{action}：{text}",
        "review.skipped_all": "队列里剩下的都已跳过。",
        "review.restart": "从最早的一条重新开始",
        "review.drop_key": "无键",
        "review.here": "这条记忆是待审提议：确认之前不会被记住。可以在这里或待审队列中处理。",
        "review.rejected_here": "这条提议已被驳回：只留作审计，不会被回忆。",
        "review.queue": "待审队列",
        "recall.proposal_waits": "原始事件：由它提出的记忆正在等待审核",
        "scope": "范围",
        "switch": "切换",
        "filters": "筛选",
        "view": "视图",
        "view.current": "当前",
        "view.history": "历史",
        "view.revoked": "已撤销",
        "kind": "类型",
        "basis": "依据",
        "any": "全部",
        "fact_key": "事实键",
        "subject": "主体",
        "text": "文本包含",
        "since": "生效不早于",
        "until": "生效早于",
        "as_of": "时间点",
        "apply": "应用",
        "reset": "重置",
        "showing": "第 {start}–{end} 条，共 {total} 条",
        "none": "没有符合条件的记忆。",
        "prev": "← 上一页",
        "next": "下一页 →",
        "open": "打开",
        "faded.gist": "已淡化为要点",
        "faded.topic_cues": "已淡化为话题线索",
        "expired": "已失效",
        "future": "尚未生效",
        "valid": "有效期",
        "until_now": "至今",
        "confidence": "置信度",
        "memory": "记忆",
        "who": "说话人",
        "session": "会话",
        "occurred": "发生于",
        "amended": "已被更正",
        "quote_here": "引用在下方原文中高亮显示。",
        "quote_elsewhere": "引用位于这段原文的另一页：",
        "quote_missing": "来源原文中找不到这段引用。",
        "go_quote": "跳到引用处",
        "chars": "第 {start}–{end} 个字符，共 {total} 个",
        "co_derived": "同一事件派生的记忆",
        "relations": "关联",
        "lineage": "更正谱系",
        "lineage.none": "这条记忆没有被更正过。",
        "lineage.mistaken": "错误",
        "lineage.corrected": "更正",
        "lineage.this": "本条",
        "timeline": "时间线：",
        "timeline.none": "不是单值事实，没有时间线。",
        "correct": "更正这条记忆",
        "correct.wrong": "这条记错了",
        "correct.wrong.body": (
            "当这条记忆从来就不对（听错、理解错、张冠李戴）时，用这个表单。你写下的陈述会成为一条新的"
            "更正事件，这条记忆被撤销（在当前和过去的视图里都不再出现），更正后的记忆从同一时间起取代它。"
        ),
        "correct.changed": "这件事变了",
        "correct.changed.body": (
            "如果当时是对的、只是现在变了（搬家了、改主意了），不要更正：把新情况作为普通事件提交"
            "（yiji event submit，或通过聊天宿主）。旧事实留在历史里，有效期在新事实开始时结束。"
        ),
        "correct.already": "这条记忆已经被更正过；请更正它的更正。",
        "statement": "实际情况是（必填）",
        "statement.help": "保存为一条新的更正事件的原文。",
        "optional": "可选字段（默认取自陈述和被更正的记忆）",
        "f.text": "记忆文本（默认：陈述本身）",
        "f.quote": "从陈述中引用（默认：整段陈述）",
        "f.valid_at": "生效时间（ISO 8601，带时区；默认：沿用原记忆的开始时间）",
        "f.confidence": "置信度（0–1）",
        "f.valence": "效价（−1–1）",
        "f.arousal": "唤醒度（0–1）",
        "f.gist": "要点",
        "f.role": "陈述者",
        "f.session": "会话（默认：原记忆的会话）",
        "f.occurred_at": "发生时间（默认：现在）",
        "submit.correct": "保存更正",
        "delete": "永久删除",
        "delete.preview": "删除预览（试运行：尚未删除任何内容）",
        "delete.explain": (
            "永久删除会移除来源事件、由它派生的所有记忆以及整条更正谱系，连同它们的检索条目、向量、线索和"
            "关联边。仅通过“相关”连接的记忆会保留。本范围的任务检查点将失效。已导出的归档、备份和远端日志"
            "不会改变。此操作无法撤销。"
        ),
        "delete.events": "将删除的事件",
        "delete.memories": "将删除的记忆",
        "delete.counts": "另外移除：{relations} 条关联边、{embeddings} 个向量、{cues} 条线索；"
        "{checkpoints} 个检查点失效。",
        "delete.type": "输入“{word}”以确认",
        "delete.word": "删除",
        "delete.mismatch": "确认文字不一致，没有删除任何内容。",
        "delete.done": "已删除 {events} 个事件和 {memories} 条记忆。",
        "delete.button": "永久删除",
        "back": "返回记忆列表",
        "recall.title": "回忆检索",
        "recall.placeholder": "问问忆迹记得什么……",
        "recall.search": "检索",
        "recall.none": "没有找到与此查询相关的证据。",
        "recall.why": "原因",
        "recall.raw": "原始事件（未派生记忆）；是原文，不是核实过的事实",
        "recall.context": "前后的对话",
        "recall.score": "得分",
        "persona.title": "人设版本",
        "persona.readonly": "此处只读：人设通过命令行修改（{yiji} persona set / rollback）。",
        "persona.version": "第 {version} 版",
        "emotion.title": "当前情绪",
        "emotion.none": "当前没有角色情绪（未曾表达，或已衰减）。",
        "emotion.valence": "效价",
        "emotion.arousal": "唤醒度",
        "emotion.factor": "衰减系数 {factor}（半衰期 {hours} 小时），表达于 {at}",
        "error": "出了点问题",
        "error.forbidden": "请使用 yiji ui 打印的链接（带令牌）打开此页面。",
        "error.host": "已拒绝：此服务只响应 127.0.0.1 或 localhost。",
        "error.csrf": "已拒绝：表单的安全令牌缺失或已过期。请刷新页面后重试。",
        "error.notfound": "在此范围内找不到。",
        "invalid": "未保存",
        "nav.conversations": "对话",
        "conversations.title": "对话",
        "conversations.none": "这个范围里还没有对话。",
        "conversations.showing": "第 {start}–{end} 个会话，共 {total} 个",
        "conversations.session": "会话",
        "conversations.events": "事件数",
        "conversations.first": "开始于",
        "conversations.last": "最近一次",
        "conversations.opening": "开头",
        "conversation.title": "对话",
        "conversation.all": "全部对话",
        "conversation.showing": "第 {start}–{end} 个事件，共 {total} 个，按存入顺序排列",
        "conversation.derived": "由这条事件派生的记忆",
        "conversation.nothing": "这条事件没有派生记忆。",
        "conversation.cut": "还有 {count} 个字符未在此显示。",
        "conversation.in": "在对话中查看",
        "flash.corrected": "更正已保存：错误的记忆已撤销，由这条记忆取代。",
        "flash.dismiss": "知道了",
        "flash.accepted": "已确认：这条记忆现在被记住了。",
        "flash.rejected": "已驳回：这条记忆不会被记住，只留作审计。",
        "flash.edited": "已修改：这条待审记忆仍在等待审阅。",
        "recall.as_of": "时间点",
        "recall.as_of.help": "当天成立的情况（留空：现在）",
        "recall.history": "包括历史（已失效和尚未生效的事实）",
        "why.score": "得分",
        "why.parts": "依据",
        "why.factors": "调整",
        "why.lexical": "词语匹配",
        "why.cue": "线索",
        "why.fact": "所问的事实",
        "why.diversity": "同一会话已有命中",
        "why.time": "所问的时间",
        "why.speaker": "助手说的（问题问的是你）",
        "why.related": "关联记忆",
        "why.cosine": "语义相近",
        "why.neighbour": "相邻对话",
        "why.session": "同一会话",
        "why.basis": "来源",
        "why.confidence": "置信度",
        "why.freshness": "新鲜度",
        "why.matched": "匹配的词",
        "why.in_source": "只在来源对话中（不在这条记忆的文字里）",
        "why.uninformative": "常见词（只算一点）",
        "why.context_of": "作为上下文，属于",
        "why.weak": "弱匹配：未达到命中标准，排在最后。",
        "how.lexical": "词语匹配",
        "how.cue": "线索",
        "how.fact": "所问的事实",
        "how.related": "关联记忆",
        "how.vector": "语义相近",
        "how.weak": "弱匹配",
        "persona.note.default": "中性默认",
        "persona.note.rollback": "回滚到第 {version} 版",
        "emotion.memory": "表达于",
    },
}

MESSAGES = {language: {**words, **shared_words(language)} for language, words in _UI_WORDS.items()}
"""Every word of the UI in each language, the shared ones included."""

KIND_NAMES = {
    "zh": {
        "fact": "事实",
        "preference": "偏好",
        "episode": "经历",
        "observation": "观察",
        "emotion": "情绪",
        "agreement": "约定",
        "growth": "成长",
        "user_statement": "用户陈述",
        "assistant_expression": "助手表达",
        "inference": "推断",
        "user": "用户",
        "assistant": "助手",
        "system": "系统",
        "tool": "工具",
        "related": "相关",
        "corrects": "更正",
        "conversation": "对话",
        "reference": "参考资料",
        "persona": "人设",
        "correction": "更正",
    },
    "en": {
        "user_statement": "user statement",
        "assistant_expression": "assistant expression",
    },
}


def pick_language(accept_language: str | None) -> str:
    """``zh`` or ``en``: the first supported language in the header by its q-value, else English."""
    best: tuple[float, int, str] | None = None
    for position, part in enumerate((accept_language or "").split(",")):
        tag, _, params = part.strip().partition(";")
        weight = 1.0
        if params.strip().startswith("q="):
            try:
                weight = float(params.strip()[2:])
            except ValueError:
                continue
        primary = tag.strip().lower().split("-")[0]
        if primary in LANGUAGES and weight > 0:
            candidate = (-weight, position, primary)
            if best is None or candidate < best:
                best = candidate
    return best[2] if best else "en"


def name_of(language: str, value: str) -> str:
    """A kind, basis, role or relation type in the UI's language."""
    return KIND_NAMES.get(language, {}).get(value, value.replace("_", " "))


COUNTED_NOUNS = {
    "events": ("event", "events"),
    "memories": ("memory", "memories"),
    "relations": ("relation edge", "relation edges"),
    "embeddings": ("vector", "vectors"),
    "cues": ("cue", "cues"),
    "checkpoints": ("checkpoint", "checkpoints"),
}
"""The English nouns of the counts a message takes, singular and plural."""


def counts_of(language: str, **numbers: int) -> dict[str, str]:
    """Counts for a message: in English each number with its noun in the number it takes (``1 memory``,
    ``2 memories``); in Chinese the bare number, the message carrying the measure word (``1 条记忆``)."""
    if language == "zh":
        return {name: str(n) for name, n in numbers.items()}
    return {name: counted(n, *COUNTED_NOUNS[name]) for name, n in numbers.items()}


_ROLLBACK_NOTE = re.compile(r"^rollback to version (\d+)$")
_NOTES = {"neutral default": "persona.note.default"}  # the notes the service writes (service/personas.py)


def persona_note(language: str, note: str) -> str:
    """A persona version's note in the UI's language: the notes yiji writes itself (the neutral default,
    a rollback) are translated; a note of any other wording is shown as stored."""
    words = MESSAGES[language]
    rollback = _ROLLBACK_NOTE.match(note)
    if rollback:
        return words["persona.note.rollback"].format(version=rollback.group(1))
    key = _NOTES.get(note)
    return words[key] if key else note
