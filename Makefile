# Veloces: the README's two commands are `make demo` and `make test`.
SHELL := /bin/bash
PY    := build/venv/bin/python
VLAB  := ./vlab

DEMO_OUT ?= build/demo
DEMO_SCHEDULERS ?= none,mq-deadline,kyber,bfq,veloces

.PHONY: all deps deps-rt module module-check demo test test-unit test-boot lint clean help

help:
	@echo "make demo   - install what is needed, compare I/O schedulers on kernel 6.1, print the table"
	@echo "make test   - install what is needed and run every test (lint, unit, boots 6.1 and 6.12)"
	@echo "make deps   - only install/check dependencies (idempotent); deps-rt adds PREEMPT_RT kernels"

deps:
	@python3 lab/deps.py

deps-rt:
	@python3 lab/deps.py --rt

module: deps
	$(MAKE) -C kernel modules

module-check: module
	$(MAKE) -C kernel check

demo: module
	$(VLAB) compare --kernel 6.1 --device lab/devices/demo.dev --job lab/jobs/mixed-randrw.fio \
		--schedulers $(DEMO_SCHEDULERS) --repeat 3 --runtime 4 --out $(DEMO_OUT)

lint: deps
	cd lab && ../$(PY) -m ruff check . && ../$(PY) -m ruff format --check . && ../$(PY) -m mypy

test-unit: deps
	cd lab && ../$(PY) -m pytest -q -m "not boot"

test-boot: module
	cd lab && ../$(PY) -m pytest -q -m boot

test: deps lint module-check
	cd lab && ../$(PY) -m pytest -q -ra

clean:
	rm -rf build
