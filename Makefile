# Everything installs itself: `make test` and `make demo` work on a fresh clone.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export SPARK_LOCAL_IP := 127.0.0.1
# No PYSPARK_PYTHON here: local_spark_session() gives Spark's workers the Python that runs it.

.PHONY: setup test unit integration lint demo bench soak clean kafka-jars kafka-jars-lock test-active-active test-secure wheel wheel-x86_64 wheel-aarch64 wheel-check fuzz avro-java test-deploy fuzz-avro test-min test-matrix test-oldest test-pipeline docs

# The compiled read core (native/, docs/core.md): built from source with the
# machine's cargo and installed into .venv; NATIVE=0 skips it (the Python reader then reads).
# The cargo build is cached outside the worktree, so fresh clones and worktrees reuse it.
NATIVE ?= 1
CARGO ?= cargo
export CARGO_TARGET_DIR ?= $(HOME)/.cache/pyspark-dynamic-kafka/native-target
CORE_STAMP := $(VENV)/.core-installed
CORE_SOURCES := native/Cargo.toml native/Cargo.lock native/pyproject.toml \
	$(shell find native/src native/python -type f)
CORE_BUILD := build/core-wheel
SETUP := $(STAMP) $(if $(filter 1,$(NATIVE)),$(CORE_STAMP))

setup: $(SETUP)

$(STAMP): requirements-dev.txt pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "error: $(PYTHON) not found (Python 3.11 is required)"; exit 1; }
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	$(PY) -m pip install --quiet --no-deps -e .
	@touch $(STAMP)

$(CORE_STAMP): $(STAMP) $(CORE_SOURCES)
	@command -v $(CARGO) >/dev/null 2>&1 || { echo "error: $(CARGO) not found: the compiled core needs Rust 1.88+ (make setup NATIVE=0 skips it)"; exit 1; }
	rm -rf $(CORE_BUILD)
	$(VENV)/bin/maturin build --quiet --release --locked -j 2 -m native/Cargo.toml -i $(PY) -o $(CORE_BUILD)
	$(PY) -m pip install --quiet --force-reinstall --no-deps $(CORE_BUILD)/*.whl
	@touch $(CORE_STAMP)

# Installable wheels (no Rust needed to install them) into dist/: the package's pure-Python wheel
# and the compiled core's, abi3 (CPython 3.10+) for manylinux2014 (glibc 2.17+), one per
# WHEEL_ARCHS (docs/core.md). zig (ziglang, in .venv) compiles and links for
# glibc 2.17, so this machine builds both; Rust needs both targets (added with rustup when missing).
WHEEL_ARCHS := x86_64 aarch64
wheel: $(STAMP)
	rm -rf dist
	$(PY) -m pip wheel --quiet --no-deps -w dist .
	$(MAKE) --no-print-directory $(addprefix wheel-,$(WHEEL_ARCHS))

# One core wheel into dist/ (make wheel-x86_64, make wheel-aarch64), cached in
# CARGO_TARGET_DIR/<arch>-unknown-linux-gnu. maturin --zig builds the crates' C (OpenSSL, zlib,
# zstd) with zig; librdkafka's own ./configure reads only CC and CXX, so they are zig for the
# same glibc too (native/zig-cc): with the host's compiler it links the host glibc's C11 threads
# (2.28+) unversioned, which auditwheel does not see and glibc 2.17 to 2.27 fail to load.
# LDFLAGS: zig's lld, unlike GNU ld, refuses the version script of librdkafka's shared library
# (built beside the static one the core links), which names a symbol this build leaves out.
ZIG = $(shell $(PY) -c 'import os, ziglang; print(os.path.dirname(ziglang.__file__) + "/zig")')
$(addprefix wheel-,$(WHEEL_ARCHS)): wheel-%: $(STAMP)
	@test -d "$$(rustc --print target-libdir --target $*-unknown-linux-gnu)" || \
		{ command -v rustup >/dev/null 2>&1 && rustup target add $*-unknown-linux-gnu; } || \
		{ echo "error: Rust's target $*-unknown-linux-gnu is not installed and rustup could not \
	add it (rustup target add $*-unknown-linux-gnu)"; exit 1; }
	CC="$(CURDIR)/native/zig-cc cc" CXX="$(CURDIR)/native/zig-cc c++" \
		ZIG="$(ZIG)" ZIG_TARGET=$*-linux-gnu.2.17 CARGO_ZIGBUILD_ZIG_PATH="$(ZIG)" \
		LDFLAGS=-Wl,--undefined-version \
		$(VENV)/bin/maturin build --quiet --release --locked -j 2 --zig --compatibility manylinux2014 \
		--target $*-unknown-linux-gnu -m native/Cargo.toml -i $(PY) -o dist

# auditwheel show on each core wheel in dist/ (after make wheel): fails unless each is
# manylinux2014 (manylinux_2_17) for the architecture its name says and needs no glibc symbol
# without a version (tests/wheel_check.py).
wheel-check: $(STAMP)
	$(PY) tests/wheel_check.py dist/pyspark_dynamic_kafka_core-*.whl

# With NATIVE=1 also the compiled core's Rust checks, in the shared CARGO_TARGET_DIR (warm: seconds).
lint: $(SETUP)
	$(VENV)/bin/ruff check src tests benchmarks examples tools
	$(VENV)/bin/ruff format --check src tests benchmarks examples tools
	$(VENV)/bin/mypy
ifeq ($(NATIVE),1)
	cd native && $(CARGO) fmt --check
	cd native && $(CARGO) clippy --quiet --release --all-targets --locked -j 2 -- -D warnings
	cd native && $(CARGO) test --quiet --release --locked -j 2
endif

# The compiled core's protocol parsers fuzzed with proptest (native/src/protocol/fuzz.rs): FUZZ_CASES
# cases for each of its 10 properties, a million in all by default (cargo test runs 256 each).
# Then the property-based tests (tests/unit/test_fuzz_*.py) on 20,000 new cases per property
# (HYPOTHESIS_PROFILE=fuzz-deep; make test runs the same 300), and both Avro decoders against
# Apache Avro Java on AVRO_FUZZ_PAIRS generated writer/reader schema pairs
# (tests/integration/test_avro_java_differential.py; make avro-java runs 2,000).
FUZZ_CASES ?= 100000
AVRO_FUZZ_PAIRS ?= 100000
fuzz: $(SETUP) fuzz-avro
	cd native && PROPTEST_CASES=$(FUZZ_CASES) $(CARGO) test --release --locked -j 2 protocol::fuzz
	HYPOTHESIS_PROFILE=fuzz-deep $(PY) -m pytest -q -p no:xdist tests/unit -k fuzz

# The Avro step of make fuzz alone: AVRO_FUZZ_PAIRS new pairs against Apache Avro Java (about
# 4 min per 10,000 on 2 cores: past the suite's 600 s timeout per test).
fuzz-avro: $(SETUP) kafka-jars
	AVRO_JAVA_RANDOM=1 AVRO_JAVA_PAIRS=$(AVRO_FUZZ_PAIRS) DYNAMIC_KAFKA_TEST_BROKER=kafka \
		$(PY) -m pytest -q -s -p no:xdist --timeout 7200 \
		tests/integration/test_avro_java_differential.py -k "generated or text_that"

# The generated Avro schema pairs against Apache Avro Java, AVRO_JAVA_PAIRS of them drawn the same
# every run (2,000 by default, as make test runs them; about a minute).
AVRO_JAVA_PAIRS ?= 2000
avro-java: $(SETUP) kafka-jars
	AVRO_JAVA_PAIRS=$(AVRO_JAVA_PAIRS) DYNAMIC_KAFKA_TEST_BROKER=kafka $(PY) -m pytest -q -s -p no:xdist \
		tests/integration/test_avro_java_differential.py -m avro_java_pairs

unit: $(SETUP)
	$(PY) -m pytest -q tests/unit

# The integration suite runs on the broker kind DYNAMIC_KAFKA_TEST_BROKER names (Apache Kafka
# unless the caller set it, as the testing kit's default), or on the existing brokers
# DYNAMIC_KAFKA_TEST_BROKERS names. make test then runs the smoke tests (marker `smoke`) again on
# the embedded Tansu broker, which `make demo` uses and users may name (broker="tansu").
TEST_BROKER := $(or $(DYNAMIC_KAFKA_TEST_BROKER),kafka)
TEST_NEEDS_JARS := $(if $(DYNAMIC_KAFKA_TEST_BROKERS),,$(filter kafka,$(TEST_BROKER)))

integration: $(SETUP) $(if $(TEST_NEEDS_JARS),kafka-jars)
	$(PY) -m pytest -q tests/integration

# The suite mostly waits (on Spark, brokers, child processes): make test runs it in TEST_WORKERS
# pytest-xdist workers (each its own Spark session and clusters; TEST_WORKERS=1: one process).
TEST_WORKERS ?= 2

test: lint $(if $(TEST_NEEDS_JARS),kafka-jars) $(SETUP)
	DYNAMIC_KAFKA_TEST_BROKER=$(TEST_BROKER) $(PY) -m pytest -q -ra \
		-m "not active_active and not deploy and not matrix" --durations=25 \
		$(if $(filter-out 1,$(TEST_WORKERS)),-n $(TEST_WORKERS) --dist worksteal) tests
ifneq ($(TEST_BROKER)$(DYNAMIC_KAFKA_TEST_BROKERS),tansu)
	env -u DYNAMIC_KAFKA_TEST_BROKERS DYNAMIC_KAFKA_TEST_BROKER=tansu \
		$(PY) -m pytest -q -ra -m smoke --ignore tests/integration/test_newcomer.py tests/integration
endif

# The lowest declared versions, in a new virtualenv (build/venv-min): the package's dependencies
# and every extra's at their floors and PySpark at the lowest supported (tests/min_requirements.py),
# the package and the core from make wheel's wheels (the core's for this machine). Then the unit
# suite, and on Apache Kafka the smoke tests (a read, a batch, a restart, a migration, the CLI)
# with Avro from registries and the sink.
MIN_VENV := build/venv-min
MIN_SMOKE := tests/integration/test_avro_source.py \
	tests/integration/test_sink_write.py::test_batch_write_puts_every_row_on_the_route
test-min: wheel kafka-jars
	rm -rf $(MIN_VENV)
	$(PYTHON) -m venv $(MIN_VENV)
	$(PY) tests/min_requirements.py > build/min-requirements.txt
	$(MIN_VENV)/bin/python -m pip install --quiet -r build/min-requirements.txt
	$(MIN_VENV)/bin/python -m pip install --quiet --no-deps --no-index --find-links dist \
		pyspark-dynamic-kafka pyspark-dynamic-kafka-core
	$(MIN_VENV)/bin/python -m pip check
	$(MIN_VENV)/bin/python -m pytest -q -n $(TEST_WORKERS) tests/unit
	DYNAMIC_KAFKA_TEST_BROKER=kafka $(MIN_VENV)/bin/python -m pytest -q -ra -n $(TEST_WORKERS) \
		-m smoke tests/integration --ignore tests/integration/test_server_contract_fuzz.py
	DYNAMIC_KAFKA_TEST_BROKER=kafka $(MIN_VENV)/bin/python -m pytest -q -ra -n $(TEST_WORKERS) \
		$(MIN_SMOKE)

# The wheels on every supported PySpark and Python, each in a new virtualenv under build/matrix
# (tests/matrix.py): each PySpark minor PyPI serves from 4.0 (its newest patch) with this Python,
# and with Python 3.10, 3.12 and 3.13 the newest PySpark that installs on each (4.3 needs 3.11); in
# each the integration smoke on Apache Kafka, Avro, the batch and stream sink and
# tests/integration/test_pyspark_versions.py. 10 to 18 min a cell on 2 cores; the table goes to
# build/matrix/results.md. MATRIX_CELLS="3.10:4.0.5 ..." picks.
test-matrix: wheel kafka-jars
	$(PY) tests/matrix.py $(MATRIX_CELLS)

# The Declarative Pipelines example (examples/pipeline/) run twice by spark-pipelines on Apache
# Kafka through a move, exactly once at its sink: 2.5 to 5 minutes (make test runs it too).
test-pipeline: kafka-jars $(SETUP)
	DYNAMIC_KAFKA_TEST_BROKER=kafka $(PY) -m pytest -q -ra -m pipeline tests/integration

# The matrix's cell of the oldest supported pair (the lowest Python, the lowest PySpark minor's
# newest patch) from wheels built for this machine (tests/local_wheels.py: no manylinux build):
# what CI runs beside make test, which runs on the newest PySpark.
test-oldest: kafka-jars $(SETUP)
	rm -rf build/wheels-local
	$(PY) tests/local_wheels.py build/wheels-local
	$(PY) tests/matrix.py --wheels build/wheels-local --oldest

# The tests on a standalone Spark cluster (marker deploy): test_deploy.py (with a Spark Connect
# server and spark-submit) and test_sink_speculation.py (two hosts). Six JVMs and more at once,
# about 10 min of test time on 2 cores, and the load they add slowed the rest of the suite: not
# part of make test; run before resolving an issue, with the wider matrices.
test-deploy: kafka-jars $(SETUP)
	DYNAMIC_KAFKA_TEST_BROKER=kafka $(PY) -m pytest -q -ra -m deploy tests/integration

# assignment=group across two driver processes ("dc1", "dc2") on an Apache Kafka stretch cluster:
# handoffs, restart, drain to lag 0, kill -9 (about 4.5 min, so not part of make test).
# The read path's tests that touch the connection, on the SASL_SSL listener of every Apache
# Kafka test cluster (TLS and SASL PLAIN; SCRAM-SHA-512 where a test rotates SCRAM passwords):
# the compiled core's direct fetch path reads them (tests assert it through Reader.fallback()).
SECURE_TESTS := test_read.py test_native_read.py test_native_fetch.py test_transactional_reads.py \
	test_native_security.py test_kafka_faults.py test_cluster_outage.py test_credential_rotation.py

test-secure: kafka-jars $(SETUP)
	DYNAMIC_KAFKA_TEST_BROKER=kafka DYNAMIC_KAFKA_TEST_LISTENER=SASL_SSL $(PY) -m pytest -q -ra \
		$(if $(filter-out 1,$(TEST_WORKERS)),-n $(TEST_WORKERS) --dist worksteal) \
		$(addprefix tests/integration/,$(SECURE_TESTS))

test-active-active: kafka-jars $(SETUP)
	DYNAMIC_KAFKA_TEST_BROKER=kafka $(PY) -m pytest -q -ra -s -m active_active tests/integration

# The Apache Kafka jars of the real-Kafka test clusters (needs java; no Maven): the jars
# src/pyspark_dynamic_kafka/testing/kafka_jars.lock lists, fetched once from Maven Central over
# HTTPS into ~/.cache/pyspark-dynamic-kafka/kafka-<version>/, each checked against its published
# .sha1 and the lock, plus a class-data sharing archive of the broker's classes there (brokers
# start ~40% faster).
kafka-jars: $(SETUP)
	$(PY) -m pyspark_dynamic_kafka.testing.kafka_cds

# kafka_jars.lock regenerated from kafka_pom.xml with Maven (needs mvn): after a change of the pom
# (a new Kafka release). tests/integration/test_kafka_jars_lock.py checks it is up to date.
kafka-jars-lock: $(SETUP)
	$(PY) -m pyspark_dynamic_kafka.testing.kafka_lock --write

# `make demo BROKER=tansu` runs the same migration on the embedded Tansu broker (atLeastOnce).
BROKER ?= kafka
demo: $(SETUP) $(if $(filter kafka,$(BROKER)),kafka-jars)
	$(PY) examples/demo.py --broker $(BROKER)

# First the whole query as users time it (benchmarks/whole_query.py: start() to the end of an
# AvailableNow drain and load() to the result, beside format("kafka") / the union and the trivial
# Python source, with the per-phase split of the time outside triggers); then the read window:
# side by side with the peers (Spark's format("kafka"), a union of them, raw confluent-kafka,
# Flink's Dynamic Kafka Source, the Python Data Source floor): needs java and mvn; the peers' jars
# are resolved from Maven Central into ~/.cache/pyspark-dynamic-kafka/ (benchmarks/peers/).
# benchmarks/latency.py: end-to-end latency of small micro-batches beside format("kafka");
# benchmarks/memory.py: a task's peak RSS reading 0.5M -> 4M records, both readers.
# benchmarks/trees.py: this tree against BENCH_OLD_REV (the tree before the source/ redesign),
# each in a Spark session of its own, same data, interleaved rounds; benchmarks/sink.py: the
# sink's writes (atLeastOnce, exactlyOnce, df.write) beside Spark's format("kafka") sink;
# benchmarks/write_floor.py: the write floor (a trivial Python stream writer that drops Spark's
# Arrow batches) beside noop, Spark's sink and ours, whole queries and addBatch, CPU by thread;
# benchmarks/avro.py: Avro values (valueFormat=avro, ids from a registry) beside format("kafka") +
# from_avro (spark-avro from Maven Central, benchmarks/peers/spark-avro/); benchmarks/avro_sink.py:
# the sink's valueFormat=avro beside Spark's sink fed to_avro; benchmarks/write_latency.py: the
# sink's small micro-batches (1 s trigger, 1,000 rows/s), per-batch cost and latency.
BENCH_OLD_REV ?= dc7d380
WHOLE_QUERY_CASES ?= kafka-1x8 kafka-3x4 kafka-scram512-1x8
bench: $(SETUP) kafka-jars
	$(PY) -m benchmarks.whole_query --phases --cases $(WHOLE_QUERY_CASES)
	$(PY) -m benchmarks.run
	$(PY) -m benchmarks.prefetch
	$(PY) -m benchmarks.memory
	$(PY) -m benchmarks.hybrid
	$(PY) -m benchmarks.monitoring
	$(PY) -m benchmarks.scale
	$(PY) -m benchmarks.latency
	$(PY) -m benchmarks.trees --rev $(BENCH_OLD_REV)
	$(PY) -m benchmarks.sink
	$(PY) -m benchmarks.write_floor
	$(PY) -m benchmarks.avro
	$(PY) -m benchmarks.avro_sink
	$(PY) -m benchmarks.write_latency

# The soak (not in make test): a stream over 3 Apache Kafka clusters whose mapping changes every
# 20 s for 20 minutes, production throughout; asserts exact output and flat RSS/threads/fds of
# the Spark processes (benchmarks/soak.py). SOAK_ARGS="--minutes 4" for a short run,
# SOAK_ARGS="--broker tansu" on the embedded broker (then no jars are needed).
soak: $(SETUP) $(if $(findstring tansu,$(SOAK_ARGS)),,kafka-jars)
	$(PY) -m benchmarks.soak $(SOAK_ARGS)

# The documentation site into build/site: README.md as its home page and the guides of docs/
# (mkdocs.yml; tools/mkdocs_hooks.py fits their GitHub links to the site). --strict fails on any
# warning, a link to a missing page or heading among them. Needs only .venv (no compiled core).
# First the options tables are checked against the code (python -m tools.docs_options fixes).
docs: $(STAMP)
	$(PY) -m tools.docs_options --check
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir build/site

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
