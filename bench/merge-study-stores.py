#!/usr/bin/env python3
"""Copies the experiments of several colo stores into one, so that one
`colo report exp:A exp:B ...` covers study parts that ran on fresh machines
(bench/study.sh writes one store per part when the store is not carried).

    bench/merge-study-stores.py OUT.db IN.db...

Every id is renumbered past the ids already in OUT.db; nothing else changes.
All stores must have the same schema version (the one colo wrote); OUT.db is
created from the first input when it does not exist. Prints, per input, the
experiment ids it received in OUT.db.
"""
import shutil
import sqlite3
import sys

# table -> (its own id column or None, {column: table whose ids it holds})
TABLES = {
    "runs": ("id", {}),
    "jobs": ("id", {"run_id": "runs"}),
    "job_events": ("id", {"job_id": "jobs"}),
    "device_samples": (None, {"run_id": "runs"}),
    "process_samples": (None, {"run_id": "runs", "job_id": "jobs"}),
    "experiments": ("id", {}),
    "experiment_cases": ("id", {"experiment_id": "experiments", "run_id": "runs"}),
    "data_loaders": ("id", {"run_id": "runs"}),
    "data_consumers": (None, {"loader_id": "data_loaders", "job_id": "jobs"}),
}


def version(db):
    return db.execute("PRAGMA user_version").fetchone()[0]


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    out_path, inputs = argv[1], argv[2:]
    try:
        open(out_path).close()
        first = 0
    except FileNotFoundError:
        shutil.copyfile(inputs[0], out_path)
        first = 1
        print(f"{inputs[0]}: copied as {out_path}")
    out = sqlite3.connect(out_path)
    for path in inputs[first:]:
        src = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        if version(src) != version(out):
            sys.exit(f"{path}: schema version {version(src)}, but {out_path} has {version(out)}")
        offset = {t: out.execute(f"SELECT COALESCE(MAX(id), 0) FROM {t}").fetchone()[0]
                  for t, (key, _) in TABLES.items() if key}
        for table, (key, refs) in TABLES.items():
            cols = [r[1] for r in src.execute(f"PRAGMA table_info({table})")]
            shift = {c: offset[t] for c, t in refs.items()}
            if key:
                shift[key] = offset[table]
            rows = [tuple(v + shift[c] if c in shift and v is not None else v
                          for c, v in zip(cols, row))
                    for row in src.execute(f"SELECT {', '.join(cols)} FROM {table}")]
            out.executemany(f"INSERT INTO {table} ({', '.join(cols)}) VALUES "
                            f"({', '.join('?' * len(cols))})", rows)
        ids = [r[0] + offset["experiments"] for r in src.execute("SELECT id FROM experiments")]
        print(f"{path}: experiments {', '.join(f'exp:{i}' for i in ids) or 'none'}")
        out.commit()
    print(f"{out_path}: experiments {', '.join(f'exp:{r[0]}' for r in out.execute('SELECT id FROM experiments ORDER BY id'))}")


if __name__ == "__main__":
    main(sys.argv)
