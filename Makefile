# Everyday checks; .ci/run does the same from a fresh virtual environment.
PY_DIRS := src tests bench examples

.PHONY: check lint test bench

check: lint test

lint:
	ruff check $(PY_DIRS)
	ruff format --check $(PY_DIRS)
	mypy

test:
	pytest

bench:
	python bench/telemetry_bench.py
	python bench/ppo_bench.py
	python bench/sanctum_bench.py
	python bench/attached_bench.py
