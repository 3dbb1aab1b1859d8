#!/usr/bin/env python3
"""Run the neardup binary over the hostile corpus (tools/hostile/generate.py) and check how it behaves.

Usage:
    python3 tools/hostile/generate.py /tmp/hostile --scale ci
    python3 tools/hostile/run.py --bin target/debug/neardup --corpus /tmp/hostile \
        [--limit-s 30] [--mem-mib 1024] [--jobs 1] [--table FILE] [--only CLASS] [--id SUBSTRING]

Each manifest entry's command runs with stdin from /dev/null, stdout and stderr captured to files, in its own
process group, under a wall limit (the group is killed when it runs out) and an address-space ceiling
(RLIMIT_AS, set in the child: 4 x --mem-mib, at least 4 GiB) so that a memory bomb fails instead of taking
the machine down. Its peak resident memory is the child's ru_maxrss from os.wait4.

An entry fails when:
    panic         exit status 101, or "panicked at" in stderr
    abort         killed by a signal or exit status 134 (stack overflow, abort, allocation failure)
    hang          still running at the wall limit
    memory        peak RSS above --mem-mib (or an allocation failure under the ceiling)
    exit          an exit status the README does not document for the case (expect "ok": 0; "refused": the
                  entry's exit_codes, default 1; "either": 0 or those)
    unnamed       a refusal whose stderr names neither the file's path nor its name (escaped forms allowed)
    leak          a must_not_contain string in stdout or stderr (e.g. /etc/passwd's first line)
    check         stderr_mentions / stderr_regex / stdout_contains / stdout_lines / distinct_stdout_lines / setup /
                  a follow-up command (e.g. `index stats` after `index add-fingerprints`) not as expected

It prints a table of classes x (files, panics, hangs, over-memory, other failures, worst peak MiB, worst
seconds), then each failing entry with the first line of its stderr (or 'timeout' / 'peak N MiB'), and ends
with the line `N passed, N failed`. The exit status is 1 if anything failed.
"""
import argparse
import concurrent.futures
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

MIB = 1 << 20


def expand(arg, ctx):
    for key, value in ctx.items():
        arg = arg.replace("{" + key + "}", value)
    return arg


def run_one(argv, limit_s, as_bytes, cwd, tmp):
    """Runs argv; returns dict(rc, signal, timed_out, seconds, peak_mib, stdout, stderr)."""
    out = tempfile.TemporaryFile(dir=tmp)
    err = tempfile.TemporaryFile(dir=tmp)

    def child():
        os.setsid()
        resource.setrlimit(resource.RLIMIT_AS, (as_bytes, as_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    started = time.monotonic()
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, cwd=cwd,
                                preexec_fn=child, close_fds=True)
    except OSError as e:
        err.write(f"run.py: cannot execute {argv[0]}: {e}\n".encode())
        out.seek(0)
        err.seek(0)
        return {"rc": 127, "timed_out": False, "seconds": 0.0, "peak_mib": 0.0, "stdout": b"",
                "stderr": err.read()}
    pid = proc.pid
    deadline = started + limit_s
    timed_out = False
    delay = 0.001
    while True:
        wpid, status, usage = os.wait4(pid, os.WNOHANG)
        if wpid == pid:
            break
        now = time.monotonic()
        if now >= deadline:
            timed_out = True
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            wpid, status, usage = os.wait4(pid, 0)
            break
        time.sleep(min(delay, deadline - now))
        delay = min(delay * 2, 0.05)
    seconds = time.monotonic() - started
    rc = os.waitstatus_to_exitcode(status)
    proc.returncode = rc  # reaped here (wait4 gives the rusage); Popen must not wait again
    out.seek(0)
    err.seek(0)
    stdout, stderr = out.read(), err.read()
    out.close()
    err.close()
    return {"rc": rc, "timed_out": timed_out, "seconds": seconds, "peak_mib": usage.ru_maxrss / 1024,
            "stdout": stdout, "stderr": stderr}


class Feeder:
    """Writes `data` into a FIFO as a producer would (`producer > fifo &`): a blocking open that completes when
    the command opens the FIFO for reading. If the command never does, stop() releases the open."""

    def __init__(self, path, data):
        self.path, self.data = path, data
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        try:
            fd = os.open(self.path, os.O_WRONLY)
        except OSError:
            return
        try:
            os.write(fd, self.data)
        except OSError:
            pass
        finally:
            os.close(fd)

    def stop(self):
        if self.thread.is_alive():
            try:
                fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
            except OSError:
                fd = None
            self.thread.join(5)
            if fd is not None:
                os.close(fd)


def name_forms(path_bytes, corpus_bytes):
    """Strings any one of which, found in stderr, counts as naming the file."""
    rel = os.path.relpath(path_bytes, corpus_bytes) if path_bytes.startswith(corpus_bytes) else path_bytes
    raw = {path_bytes, rel, os.path.basename(path_bytes.rstrip(b"/"))}
    forms = set()
    for r in raw:
        if not r:
            continue
        forms.add(r.decode("utf-8", "replace"))
        forms.add(r.decode("utf-8", "backslashreplace"))
        forms.add(r.decode("latin-1").encode("unicode_escape").decode("ascii"))
        forms.add(r.decode("utf-8", "replace").replace("\n", "\\n").replace("\t", "\\t"))
        forms.add(r.decode("utf-8", "backslashreplace").replace("\n", "\\n").replace("\t", "\\t"))
        forms.add(json.dumps(r.decode("utf-8", "replace"))[1:-1])
        forms.add(repr(r)[2:-1])
        forms.add("".join(chr(b) if 32 <= b < 127 else f"\\x{b:02X}" for b in r))
    return forms


def check(entry, corpus, args, workdir):
    """Runs one entry; returns (result dict, list of (kind, message))."""
    tmp = tempfile.mkdtemp(prefix="entry-", dir=workdir)
    path = os.path.join(corpus, entry["path"])
    ctx = {"bin": args.bin, "path": path, "corpus": corpus, "tmp": tmp}
    as_bytes = max(4096, 4 * args.mem_mib) * MIB
    problems = []
    worst = {"seconds": 0.0, "peak_mib": 0.0}

    def go(argv):
        r = run_one([expand(a, ctx) for a in argv], args.limit_s, as_bytes, tmp, tmp)
        worst["seconds"] = max(worst["seconds"], r["seconds"])
        worst["peak_mib"] = max(worst["peak_mib"], r["peak_mib"])
        return r

    def crashes(r, what):
        """The checks that apply to every command run: panic, abort, hang, memory."""
        found = []
        stderr = r["stderr"].decode("utf-8", "replace")
        first = first_line(r)
        if r["timed_out"]:
            found.append(("hang", f"{what}timeout after {args.limit_s} s"))
        elif r["rc"] == 101 or "panicked at" in stderr:
            found.append(("panic", f"{what}exit {r['rc']}: {panic_line(stderr) or first}"))
        elif "memory allocation of" in stderr or "out of memory" in stderr.lower():
            found.append(("memory", f"{what}exit {r['rc']}: {first}"))
        elif r["rc"] < 0 or r["rc"] == 134:
            sig = -r["rc"] if r["rc"] < 0 else 6
            try:
                signame = signal.Signals(sig).name
            except ValueError:
                signame = str(sig)
            found.append(("abort", f"{what}killed by {signame}: {first}"))
        if r["peak_mib"] > args.mem_mib:
            found.append(("memory", f"{what}peak {r['peak_mib']:.0f} MiB"))
        return found

    for argv in entry.get("setup", []):
        r = go(argv)
        if r["rc"] != 0 or r["timed_out"]:
            problems.append(("check", f"setup {' '.join(argv[1:])} exit {r['rc']}: {first_line(r)}"))
    feeder = Feeder(path, entry["fifo_feed"].encode()) if "fifo_feed" in entry else None
    try:
        result = go(entry["cmd"])
    finally:
        if feeder:
            feeder.stop()
    problems += crashes(result, "")
    rc, crashed = result["rc"], bool(problems)
    stdout = result["stdout"].decode("utf-8", "replace")
    stderr = result["stderr"].decode("utf-8", "replace")
    expect = entry.get("expect", "either")
    codes = entry.get("exit_codes", [1])
    if not crashed:
        allowed = {"ok": [0], "refused": codes, "either": [0] + codes}[expect]
        if rc not in allowed:
            want = " or ".join(str(c) for c in allowed)
            problems.append(("exit", f"exit {rc}, expected {want}: {first_line(result)}"))
        if rc != 0:
            names = entry.get("names")
            forms = set(names) if names else name_forms(os.fsencode(path), os.fsencode(corpus))
            if not any(f in stderr for f in forms):
                problems.append(("unnamed", f"exit {rc}, stderr names neither file nor path: {first_line(result)}"))
    for s in entry.get("must_not_contain", []):
        if s in stdout or s in stderr:
            problems.append(("leak", f"output contains {s!r}"))
    for s in entry.get("stdout_must_not_contain", []):
        if s in stdout:
            problems.append(("leak", f"stdout contains {s!r}"))
    if not crashed:
        for s in entry.get("stderr_mentions", []):
            if s not in stderr:
                problems.append(("check", f"stderr does not mention {s!r} (exit {rc}: {first_line(result)})"))
        if "stderr_regex" in entry and not re.search(entry["stderr_regex"], stderr):
            problems.append(("check", f"stderr does not match /{entry['stderr_regex']}/: {first_line(result)}"))
        if rc == 0:
            lines = stdout.splitlines()
            for s in entry.get("stdout_contains", []):
                if s not in stdout:
                    problems.append(("check", f"stdout lacks {s!r}"))
            if "stdout_lines" in entry and len(lines) != entry["stdout_lines"]:
                problems.append(("check", f"{len(lines)} stdout lines, expected {entry['stdout_lines']}"))
            if "distinct_stdout_lines" in entry and len(set(lines)) != entry["distinct_stdout_lines"]:
                problems.append(("check", f"{len(set(lines))} distinct stdout lines, expected "
                                          f"{entry['distinct_stdout_lines']}"))
        for f in entry.get("followup", []):
            if f.get("only_if_ok") and rc != 0:
                continue
            r = go(f["cmd"])
            label = " ".join(f["cmd"][1:3])
            problems += crashes(r, f"follow-up {label}: ")
            out = r["stdout"].decode("utf-8", "replace")
            if r["rc"] != 0 or f.get("stdout_contains", "") not in out:
                problems.append(("check", f"follow-up {label}: exit {r['rc']}, stdout lacks "
                                          f"{f.get('stdout_contains')!r} ({first_line(r) or out[:80]!r})"))
            for s in entry.get("must_not_contain", []):
                if s in out or s in r["stderr"].decode("utf-8", "replace"):
                    problems.append(("leak", f"follow-up output contains {s!r}"))
    shutil.rmtree(tmp, ignore_errors=True)
    result.update(worst)
    return result, problems


def first_line(r):
    for line in r["stderr"].decode("utf-8", "replace").splitlines():
        if line.strip():
            return line.strip()[:200]
    return ""


def panic_line(stderr):
    for line in stderr.splitlines():
        if "panicked at" in line:
            return line.strip()[:200]
    return ""


KINDS = ("panic", "abort", "hang", "memory", "exit", "unnamed", "leak", "check")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True, help="the neardup binary")
    ap.add_argument("--corpus", required=True, help="the directory written by generate.py")
    ap.add_argument("--limit-s", type=float, default=30, help="wall limit per command, seconds")
    ap.add_argument("--mem-mib", type=int, default=1024, help="peak RSS allowed per process, MiB")
    ap.add_argument("--jobs", type=int, default=1, help="entries run at once")
    ap.add_argument("--table", help="also write the report to this file")
    ap.add_argument("--only", action="append", help="run only this class (repeatable)")
    ap.add_argument("--id", action="append", help="run only entries whose id contains this (repeatable)")
    args = ap.parse_args()
    args.bin = os.path.abspath(args.bin)
    corpus = os.path.abspath(args.corpus)
    if not os.access(args.bin, os.X_OK):
        sys.exit(f"run.py: {args.bin} is not an executable")
    with open(os.path.join(corpus, "manifest.jsonl"), encoding="utf-8") as f:
        entries = [json.loads(line) for line in f if line.strip()]
    if args.only:
        entries = [e for e in entries if e["class"] in args.only]
    if args.id:
        entries = [e for e in entries if any(s in e["id"] for s in args.id)]
    if not entries:
        sys.exit("run.py: no entries selected")
    workdir = tempfile.mkdtemp(prefix="neardup-hostile-")
    started = time.monotonic()
    results = [None] * len(entries)
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            futures = {pool.submit(check, e, corpus, args, workdir): i for i, e in enumerate(entries)}
            done = 0
            for fut in concurrent.futures.as_completed(futures):
                i = futures[fut]
                results[i] = fut.result()
                done += 1
                if sys.stderr.isatty():
                    print(f"\r{done}/{len(entries)} {entries[i]['id'][:60]:<60}", end="", file=sys.stderr)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if sys.stderr.isatty():
        print(file=sys.stderr)
    report = render(entries, results, args, time.monotonic() - started)
    print(report, end="")
    if args.table:
        with open(args.table, "w", encoding="utf-8") as f:
            f.write(report)
    sys.exit(1 if any(p for _, p in results) else 0)


def render(entries, results, args, elapsed):
    classes = []
    for e in entries:
        if e["class"] not in classes:
            classes.append(e["class"])
    rows = []
    header = ("class", "files", "panics", "hangs", "over-mem", "other", "failed", "worst MiB", "worst s")
    totals = dict.fromkeys(header[1:7], 0)
    worst_mib = worst_s = 0.0
    for cls in classes:
        idx = [i for i, e in enumerate(entries) if e["class"] == cls]
        kinds = [{k for k, _ in results[i][1]} for i in idx]
        row = {
            "files": len(idx),
            "panics": sum(1 for k in kinds if "panic" in k or "abort" in k),
            "hangs": sum(1 for k in kinds if "hang" in k),
            "over-mem": sum(1 for k in kinds if "memory" in k),
            "other": sum(1 for k in kinds if k and not k & {"panic", "abort", "hang", "memory"}),
            "failed": sum(1 for k in kinds if k),
        }
        mib = max(results[i][0]["peak_mib"] for i in idx)
        sec = max(results[i][0]["seconds"] for i in idx)
        worst_mib, worst_s = max(worst_mib, mib), max(worst_s, sec)
        for k in totals:
            totals[k] += row[k]
        rows.append((cls, *(str(row[k]) for k in header[1:7]), f"{mib:.0f}", f"{sec:.1f}"))
    rows.append(("total", *(str(totals[k]) for k in header[1:7]), f"{worst_mib:.0f}", f"{worst_s:.1f}"))
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
    fmt = lambda r: "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
    lines = [f"neardup hostile corpus: {args.bin}, limit {args.limit_s:g} s, {args.mem_mib} MiB, "
             f"{len(entries)} entries in {elapsed:.0f} s", "", fmt(header), fmt(["-" * w for w in widths])]
    lines += [fmt(r) for r in rows[:-1]] + [fmt(["-" * w for w in widths]), fmt(rows[-1]), ""]
    lines.append("(panics: panic or abort; other: exit status, unnamed refusal, leak, or a failed check)")
    failing = [(e, r, p) for e, (r, p) in zip(entries, results) if p]
    if failing:
        lines += ["", "Failing entries:"]
        for kind in KINDS:
            group = [(e, r, p) for e, r, p in failing if p[0][0] == kind]
            if not group:
                continue
            lines.append(f"  [{kind}] {len(group)}")
            for e, r, p in group:
                msgs = "; ".join(m for _, m in p)
                lines.append(f"    {e['id']}  ({e['note']}) [{r['seconds']:.1f} s, {r['peak_mib']:.0f} MiB]: {msgs}")
    heavy = sorted(zip(entries, results), key=lambda er: -er[1][0]["peak_mib"])[:8]
    lines += ["", "Largest peak memory:"]
    lines += [f"    {r['peak_mib']:6.0f} MiB {r['seconds']:5.1f} s  {e['id']}" for e, (r, _) in heavy]
    slow = sorted(zip(entries, results), key=lambda er: -er[1][0]["seconds"])[:8]
    lines += ["", "Longest wall time:"]
    lines += [f"    {r['seconds']:5.1f} s {r['peak_mib']:6.0f} MiB  {e['id']}" for e, (r, _) in slow]
    passed = len(entries) - len(failing)
    lines += ["", f"{passed} passed, {len(failing)} failed"]
    # Ids may hold bytes that are not UTF-8 (surrogate escapes): shown escaped.
    return "\n".join(lines).encode("utf-8", "backslashreplace").decode("utf-8") + "\n"


if __name__ == "__main__":
    main()
