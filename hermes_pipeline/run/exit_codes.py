"""What the exit status says, for cron and for people (README: exit codes)."""
from __future__ import annotations

from hermes_pipeline.config.command_line import EXIT_USAGE

EXIT_OK = 0            # all good
EXIT_CONFIG = EXIT_USAGE   # bad config or a usage error (any command's): nothing was read
EXIT_QUARANTINED = 2   # records were quarantined (or failed); the rest is done
EXIT_STOPPED = 3       # stopped early: a signal, an auth/quota error, or another run holds output.dir
EXIT_UNHEALTHY = 4     # the configured summarizer mostly failed: too many fallbacks to the embedded one


def exit_code(summary: dict, max_fallback_share: float | None, run_dir) -> tuple[int, str | None]:
    """The run's exit status from its summary, and why when it is not 0."""
    if summary["status"] == "interrupted":
        return EXIT_STOPPED, "run interrupted by a signal: summary.json says what was done"
    if summary["status"] != "complete":
        return EXIT_STOPPED, f"run stopped early: {summary.get('stopped')}"
    compacted = summary["statuses"]["compacted"]
    fallbacks = summary["fallbacks"]
    if max_fallback_share is not None and compacted and fallbacks / compacted > max_fallback_share:
        return EXIT_UNHEALTHY, (f"summarizer unhealthy: {fallbacks} of {compacted} compacted conversations fell "
                                f"back to the embedded summarizer (summarizer.max_fallback_share "
                                f"{max_fallback_share})")
    bad = summary["statuses"]["quarantined"] + summary["statuses"]["failed"]
    if bad:
        return EXIT_QUARANTINED, f"{bad} record(s) quarantined; see {run_dir}/quarantine.jsonl"
    return EXIT_OK, None
