#!/usr/bin/env python3
"""Reads an MLflow file store the way MLflow's FileStore does, without MLflow.

    scripts/check-mlflow-store.py DIR [--json]

Checks what `colo export mlflow --to DIR` wrote (or any MLflow file store)
against the rules of mlflow/store/tracking/file_store.py and
mlflow/utils/validation.py: every meta.yaml read with PyYAML's safe loader
(python3-yaml) and holding the fields MLflow reads, ids and keys MLflow
accepts, every file UTF-8, metric lines of "timestamp value [step]", and the
runs sortable by start time as MLflow's search does. Exit status 0 when all
holds; otherwise every problem on stderr and status 1. With --json, prints
what it read (experiments, runs, params, tags and metric points) as JSON.
"""

import json
import os
import posixpath
import re
import sys

import yaml

try:
    LOADER = yaml.CSafeLoader
except AttributeError:
    LOADER = yaml.SafeLoader

# mlflow/utils/validation.py
VALID_KEY = re.compile(r"^[/\w.\- ]*$")
RUN_ID = re.compile(r"^[a-zA-Z0-9][\w\-]{0,255}$")
EXPERIMENT_ID = re.compile(r"^[a-zA-Z0-9][\w\-]{0,63}$")
# mlflow/store/tracking/file_store.py
RESERVED_EXPERIMENT_FOLDERS = {"tags", "datasets", "traces"}
EXPERIMENT_FIELDS = ["artifact_location", "creation_time", "experiment_id",
                     "last_update_time", "lifecycle_stage", "name"]
RUN_FIELDS = ["artifact_uri", "end_time", "entry_point_name", "experiment_id",
              "lifecycle_stage", "run_id", "run_name", "run_uuid", "source_name",
              "source_type", "source_version", "start_time", "status", "tags", "user_id"]
RUN_STATUSES = {1, 2, 3, 4, 5}  # RUNNING, SCHEDULED, FINISHED, FAILED, KILLED

problems = []


def problem(text):
    problems.append(text)


def key_is_valid(name):
    norm = posixpath.normpath(name)
    return bool(VALID_KEY.match(name)) and not (
        norm != name or norm == "." or norm.startswith("..") or norm.startswith("/"))


def read_text(path):
    with open(path, encoding="utf-8") as f:  # MLflow: codecs.open(..., encoding="utf-8")
        return f.read()


def read_meta(folder, fields):
    path = os.path.join(folder, "meta.yaml")
    text = read_text(path)
    meta = yaml.load(text, Loader=LOADER)
    if not isinstance(meta, dict):
        problem(f"{path}: not a mapping")
        return None
    keys = [line.split(":", 1)[0] for line in text.splitlines() if line and line[0] != " "]
    if keys != fields:
        problem(f"{path}: fields {keys}, MLflow writes {fields}")
    return meta


def read_keys(folder):
    """The files below `folder` as MLflow names them (paths relative to it)."""
    names = []
    for root, _, files in os.walk(folder):
        for name in files:
            names.append(os.path.relpath(os.path.join(root, name), folder))
    return sorted(names)


def read_run(experiment_id, folder):
    meta = read_meta(folder, RUN_FIELDS)
    if meta is None:
        return None
    run_id = meta.get("run_id")
    if not isinstance(run_id, str) or not RUN_ID.match(run_id):
        problem(f"{folder}: run_id {run_id!r} is not an MLflow run id")
    if meta.get("run_uuid") != run_id or os.path.basename(folder) != run_id:
        problem(f"{folder}: run_uuid and folder must be the run_id")
    if meta.get("experiment_id") != experiment_id:
        problem(f"{folder}: experiment_id {meta.get('experiment_id')!r}, in {experiment_id}")
    if not isinstance(meta.get("start_time"), int):
        problem(f"{folder}: start_time {meta.get('start_time')!r} is not a number")
    if meta.get("end_time") is not None and not isinstance(meta.get("end_time"), int):
        problem(f"{folder}: end_time {meta.get('end_time')!r}")
    if meta.get("status") not in RUN_STATUSES:
        problem(f"{folder}: status {meta.get('status')!r}")
    if meta.get("lifecycle_stage") != "active" or meta.get("tags") != []:
        problem(f"{folder}: lifecycle_stage must be active and tags []")
    run = {"meta": meta, "params": {}, "tags": {}, "metrics": {}}
    for kind in ("params", "tags", "metrics"):
        sub = os.path.join(folder, kind)
        if not os.path.isdir(sub):
            continue
        for key in read_keys(sub):
            if not key_is_valid(key):
                problem(f"{sub}/{key}: a key MLflow refuses")
            text = read_text(os.path.join(sub, key))
            if kind != "metrics":
                run[kind][key] = text
                continue
            points = []
            for line in text.splitlines(keepends=True):
                parts = line.strip().split(" ")
                if len(parts) not in (2, 3):
                    problem(f"{sub}/{key}: line {line!r} has {len(parts)} fields")
                    continue
                points.append([int(parts[0]), float(parts[1]),
                               int(parts[2]) if len(parts) == 3 else 0])
            if not points:
                problem(f"{sub}/{key}: no points")
            run["metrics"][key] = points
    return run


def read_store(root):
    experiments = []
    for name in sorted(os.listdir(root)):
        folder = os.path.join(root, name)
        if not os.path.isdir(folder) or name == ".trash" or name == "models":
            continue
        if not EXPERIMENT_ID.match(name):
            problem(f"{folder}: {name!r} is not an MLflow experiment id")
            continue
        meta = read_meta(folder, EXPERIMENT_FIELDS)
        if meta is None:
            continue
        if meta.get("experiment_id") != name:
            problem(f"{folder}: experiment_id {meta.get('experiment_id')!r}")
        if not isinstance(meta.get("name"), str) or not meta["name"]:
            problem(f"{folder}: name {meta.get('name')!r}")
        tags = {}
        if os.path.isdir(os.path.join(folder, "tags")):
            for key in read_keys(os.path.join(folder, "tags")):
                tags[key] = read_text(os.path.join(folder, "tags", key))
        runs = []
        for run_name in sorted(os.listdir(folder)):
            run_folder = os.path.join(folder, run_name)
            if run_name in RESERVED_EXPERIMENT_FOLDERS or not os.path.isdir(run_folder):
                continue
            run = read_run(name, run_folder)
            if run is not None:
                runs.append(run)
        # MLflow's search sorts by start time first.
        runs.sort(key=lambda r: (-r["meta"]["start_time"], r["meta"]["run_id"]))
        experiments.append({"meta": meta, "tags": tags, "runs": runs})
    if not os.path.isdir(os.path.join(root, ".trash")):
        problem(f"{root}: no .trash folder")
    return experiments


def main():
    args = [a for a in sys.argv[1:] if a != "--json"]
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    experiments = read_store(args[0])
    for p in problems:
        print(f"check-mlflow-store: {p}", file=sys.stderr)
    if "--json" in sys.argv:
        print(json.dumps({"experiments": experiments}, sort_keys=True))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
