"""A stand-in for the ``claude`` CLI: prints recorded print-mode output and logs what it was given.

Run as ``claude -p --output-format stream-json|json ...`` with the prompt on
stdin. FAKE_CLAUDE_LOG names a JSONL file that gets one ``{"argv", "stdin"}``
line per run. FAKE_CLAUDE_MODE picks the recorded output: ``ok`` (a run with a
tool call), ``fail`` (dies mid-run, exit 1), ``huge`` (a tool output of 3 MB),
``garbage`` (malformed lines among the events). With ``--output-format json``
it answers with the next line of FAKE_CLAUDE_REPLIES (a JSON list of strings).
"""

import json
import os
import sys

SESSION = "8f14e45f-ceea-467f-a0e6-d2b2c1b4a001"
INIT = {
    "type": "system",
    "subtype": "init",
    "cwd": os.getcwd(),
    "session_id": SESSION,
    "tools": ["Bash", "Read", "Edit"],
    "mcp_servers": [],
    "model": "claude-sonnet-4-5-20250929",
    "permissionMode": "default",
    "apiKeySource": "none",
}
USAGE = {
    "input_tokens": 12,
    "cache_creation_input_tokens": 100,
    "cache_read_input_tokens": 50,
    "output_tokens": 30,
}


def assistant(*parts):
    return {
        "type": "assistant",
        "message": {
            "id": "msg_01",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5-20250929",
            "content": list(parts),
            "stop_reason": None,
            "usage": USAGE,
        },
        "parent_tool_use_id": None,
        "session_id": SESSION,
    }


def tool_result(content, is_error=False):
    return {
        "type": "user",
        "message": {
            "role": "user",
            "content": [
                {"tool_use_id": "toolu_01", "type": "tool_result", "content": content, "is_error": is_error}
            ],
        },
        "parent_tool_use_id": None,
        "session_id": SESSION,
    }


def result(text, is_error=False, subtype="success"):
    return {
        "type": "result",
        "subtype": subtype,
        "is_error": is_error,
        "duration_ms": 4210,
        "duration_api_ms": 3900,
        "num_turns": 2,
        "result": text,
        "session_id": SESSION,
        "total_cost_usd": 0.0123,
        "usage": USAGE,
        "permission_denials": [],
    }


def stream(mode):
    tool_output = "x" * 3_000_000 if mode == "huge" else "README.md\nsrc\ntests"
    events = [
        INIT,
        assistant({"type": "thinking", "thinking": "I should look at the files first.", "signature": "sig"}),
        assistant({"type": "tool_use", "id": "toolu_01", "name": "Bash", "input": {"command": "ls"}}),
        tool_result(tool_output),
        {"type": "stream_event", "event": {"type": "content_block_delta"}},  # a type the converter skips
        assistant({"type": "text", "text": "no idea"}),
        result("no idea"),
    ]
    lines = [json.dumps(event) for event in events]
    if mode == "garbage":
        lines.insert(2, "{not json")
        lines.insert(4, "[1, 2]")
    if mode == "fail":
        print("\n".join(lines[:4]))
        print("Error: API Error: 529 Overloaded", file=sys.stderr)
        sys.exit(1)
    print("\n".join(lines))


def answer_json():
    with open(os.environ["FAKE_CLAUDE_REPLIES"]) as source:
        replies = json.load(source)
    counter = os.environ["FAKE_CLAUDE_REPLIES"] + ".n"
    used = 0
    if os.path.exists(counter):
        with open(counter) as seen:
            used = int(seen.read())
    with open(counter, "w") as out:
        out.write(str(used + 1))
    reply = replies[min(used, len(replies) - 1)]
    if reply == "!error":
        print(
            json.dumps(result("Credit balance is too low", is_error=True, subtype="error_during_execution"))
        )
        sys.exit(1)
    print(json.dumps(result(reply)))


def main():
    prompt = sys.stdin.read()
    with open(os.environ["FAKE_CLAUDE_LOG"], "a") as log:
        log.write(json.dumps({"argv": sys.argv[1:], "stdin": prompt, "cwd": os.getcwd()}) + "\n")
    output_format = sys.argv[sys.argv.index("--output-format") + 1]
    if output_format == "json":
        answer_json()
    else:
        stream(os.environ.get("FAKE_CLAUDE_MODE", "ok"))


main()
