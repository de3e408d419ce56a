"""The exit codes of `engram`, one policy for every command, so that cron jobs and CI can tell what happened.

0  done
1  an error: the run failed, a check failed, or the input was wrong (the message says what to do)
2  usage: a missing or wrong argument
3  the stores are busy with another build (try again when it ends)
4  a build went through, but some documents failed (they keep their last graphs; the next build retries them)
5  a build extracted nothing: every document it tried failed (a model server down, say)
6  `engram ask`: the model's answer failed verification (shown as FAILED with the failed checks, never as an answer)
130  interrupted (Ctrl-C)
141  the reader of the output went away (`engram ... | head`)
"""

from __future__ import annotations

OK = 0
ERROR = 1
USAGE = 2
BUSY = 3
SOME_FAILED = 4
ALL_FAILED = 5
NOT_VERIFIED = 6
INTERRUPTED = 130
PIPE_CLOSED = 141


def build_exit_code(run_succeeded: bool, checks_passed: bool, extracted: int, failed: int) -> int:
    """A build's exit code from its run, its checks and the documents it tried this time."""
    if not (run_succeeded and checks_passed):
        return ERROR
    if failed and not extracted:
        return ALL_FAILED
    return SOME_FAILED if failed else OK
