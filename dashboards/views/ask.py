"""Ask: a question about an ingested repository, answered by a tool-calling model and verified before it is shown.

The page runs the same loop as `engram ask` (:mod:`engramrag.gitgraph.ask`): each tool call and its result is shown
as it happens, then the answer with its citations and a table of the verification checks. An answer that fails a
check is shown as FAILED with the failed checks, never as an answer. The model server is the extractor's
(``ENGRAM_LLM_BASE_URL``, ``ENGRAM_LLM_MODEL``, ``ENGRAM_LLM_API_KEY``); without one the page says how to set it.
It reads the home's decision graph and the repository; it writes nothing.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pandas as pd
import streamlit as st

from dashboards.stores import page_header
from engramrag.extract.llm.config import LLMConfig, env_name
from engramrag.gitgraph.ask import DEFAULT_MAX_STEPS, FAILED, VERIFIED, Event, ask, ask_config, how_to_configure
from engramrag.gitgraph.store import gitgraph_path, gitgraph_reader
from engramrag.store import Home, StoreBusy

RESULT_KEY = "ask_result"
FRESH_KEY = "ask_fresh"


def render() -> None:
    path, home = page_header("Ask")
    if home is None:
        return
    try:
        repos = read_repo_paths(home) if gitgraph_path(home).exists() else []
    except StoreBusy as error:
        st.warning(str(error))
        return
    if not repos:
        st.info(f"No git repository is ingested into `{path}` yet. Run `engram git ingest REPO --home {path}`, "
                "then reload this page.")  # fmt: skip
        return
    config = _model_settings()
    repo = st.selectbox("Repository", repos, key="ask_repo") if len(repos) > 1 else repos[0]
    question = st.text_area("Question", key="ask_question", placeholder="Why does the catalog use Postgres?")
    max_steps = int(st.number_input("Most model calls", 1, 50, DEFAULT_MAX_STEPS, key="ask_max_steps"))
    asked = st.button("Ask", key="ask_button", type="primary", disabled=config is None)
    fresh = False
    if asked and config is not None and question.strip():
        st.session_state[RESULT_KEY] = _run(question.strip(), home, repo, config, max_steps)
        fresh = True
    elif asked:
        st.warning("Write a question first.")
    stored = st.session_state.get(RESULT_KEY)
    if stored:
        _show(stored, transcript=not fresh)


def read_repo_paths(home: Home) -> list[str]:
    with gitgraph_reader(home) as connection:
        if connection is None:
            return []
        return [row[0] for row in connection.execute("SELECT path FROM repos ORDER BY path").fetchall()]


def _model_settings() -> LLMConfig | None:
    """The model server from ENGRAM_LLM_* or this page's fields; None (with how to set one) when there is none."""
    with st.expander("Model server", expanded=not (os.environ.get(env_name("base_url")) and
                                                  os.environ.get(env_name("model")))):  # fmt: skip
        base_url = st.text_input("Base URL", value=os.environ.get(env_name("base_url"), ""), key="ask_base_url",
                                 help=f"The chat server's address with /v1 ({env_name('base_url')}).")  # fmt: skip
        model = st.text_input("Model", value=os.environ.get(env_name("model"), ""), key="ask_model",
                              help=f"A model that calls tools ({env_name('model')}).")  # fmt: skip
        api_key = st.text_input("API key", value="", type="password", key="ask_api_key",
                                help=f"Only if the server needs one; else {env_name('api_key')} is used.")  # fmt: skip
    try:
        return ask_config(base_url=base_url.strip(), model=model.strip(), api_key=api_key.strip())
    except ValueError as error:
        if base_url.strip() and model.strip():
            st.error(str(error))
        else:
            st.info(f"No model server is configured. {how_to_configure()}, before starting the dashboard, or fill "
                    "in the model server above. Any OpenAI-compatible server with tool calling works (Ollama, vLLM, "
                    "llama.cpp, OpenAI).")  # fmt: skip
        return None


def _run(question: str, home: Home, repo: str, config: LLMConfig, max_steps: int) -> dict[str, Any]:
    with st.status("Asking the model…", expanded=True) as status:
        try:
            result = ask(question, home, repo, config, max_steps=max_steps, on_event=_show_event)
        except (LookupError, ValueError) as error:
            status.update(label="Could not ask", state="error")
            return {"status": "error", "reason": str(error), "events": []}
        label = {VERIFIED: "Verified answer", FAILED: "The answer failed verification"}.get(result.status,
                                                                                             "No answer")  # fmt: skip
        status.update(label=f"{label} · {result.steps} model call(s)",
                      state="complete" if result.verified else "error", expanded=not result.verified)  # fmt: skip
    return result.to_json()


def _show_event(event: Event) -> None:
    data = event.data
    if event.kind == "tool_call":
        arguments = ", ".join(f"{key}={value!r}" for key, value in data["arguments"].items())
        st.markdown(f"**{event.step}.** `{data['name']}({arguments})`")
    elif event.kind == "tool_result":
        with st.expander(f"{data['name']}: {'result' if data['ok'] else 'error'}"):
            st.write(data["summary"])
    elif event.kind == "retry":
        st.caption(f"{event.step}. the reply was not the answer's JSON ({data['problem']}); asked again")
    elif event.kind == "answer":
        st.caption(f"{event.step}. answered with {len(data['citations'])} citation(s); verifying")


def _show(result: dict[str, Any], transcript: bool) -> None:
    if transcript and result.get("events"):
        with st.expander(f"Transcript: {len(result.get('tool_calls') or [])} tool call(s)"):
            for event in result["events"]:
                _show_event(Event(event["kind"], event["step"], {k: v for k, v in event.items()
                                                                 if k not in ("kind", "step")}))  # fmt: skip
    status = result.get("status")
    if status == VERIFIED:
        st.success("Verified: every cited id was returned by a tool in this run, every quote is verbatim in its "
                   "evidence and every figure is inside the cited evidence.")  # fmt: skip
        st.markdown(result["answer"]["answer"])
        st.subheader("Citations")
        st.dataframe(pd.DataFrame(result["answer"]["citations"], columns=["id", "quote"]), hide_index=True,
                     use_container_width=True)  # fmt: skip
    elif status == FAILED:
        failed = sorted({failure["check"] for failure in result["verification"]["failures"]})
        st.error(f"FAILED: the model's answer did not pass verification ({', '.join(failed)}), so it is not shown "
                 "as an answer.")  # fmt: skip
    else:
        st.error(result.get("reason") or "No answer.")
    if result.get("verification"):
        st.subheader("Verification")
        st.dataframe(verification_table(result["verification"]), hide_index=True, use_container_width=True)
    with st.expander("Whole run (JSON)"):
        st.code(json.dumps(result, indent=2, ensure_ascii=False, default=str), language="json")


def verification_table(verification: dict[str, Any]) -> pd.DataFrame:
    """One row per check: whether it passed and, when it failed, each reason."""
    details: dict[str, list[str]] = {}
    for failure in verification["failures"]:
        details.setdefault(failure["check"], []).append(failure["detail"])
    rows = [{"check": check, "passed": check not in details, "detail": "; ".join(details.get(check, []))}
            for check in dict.fromkeys([*verification["checks"], *details])]  # fmt: skip
    return pd.DataFrame(rows, columns=["check", "passed", "detail"])


render()
