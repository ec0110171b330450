#!/usr/bin/env bash
# The GPU session in one command: the kernel and op tests on CUDA (compiled Triton kernels),
# then the GPU benchmarks. Each stage has its own time limit, so one slow stage cannot eat the
# others; logs and JSON go to $DEST (default benchmarks/results/gpu). Stages are chosen by name:
#   benchmarks/gpu_run.sh [tests] [ops] [mlp] [kernels] [lstm] [dist]
# Extra pytest / bench_kernels arguments: $PYTEST_ARGS, $KERNEL_ARGS; per-test limit $TEST_TIMEOUT
# (a cold Triton cache compiles every autotuned GEMM config on first use).
set -u
DEST=${DEST:-benchmarks/results/gpu}
mkdir -p "$DEST"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 SYMGRAPH_TEST_DEVICE=cuda
export SYMGRAPH_FAILURE_LOG=${SYMGRAPH_FAILURE_LOG:-$DEST/failures.log}
PY=${PY:-python3}
stages=${*:-tests ops mlp kernels}
nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total --format=csv,noheader
$PY -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
run() {  # run NAME SECONDS CMD...: log to $DEST/NAME.log, print its tail
    local name=$1 secs=$2; shift 2
    local t0=$SECONDS
    timeout -k 10 "$secs" "$@" >"$DEST/$name.log" 2>&1
    echo "== $name: exit $? in $((SECONDS - t0)) s"
    case $name in  # test logs are verbose (-v): show failures and the summary only
    tests|ops|dist|failing) grep -E "FAILED|ERROR|passed|failed|^E  " "$DEST/$name.log" \
        | cut -c1-200 | awk '!seen[$0]++' | head -n ${LINES_SHOWN:-40} ;;
    *) tail -n "${TAIL:-15}" "$DEST/$name.log" ;;
    esac
}
for stage in $stages; do
    case $stage in
    tests) run tests "${TESTS_S:-240}" $PY -m pytest -o addopts= -p no:cacheprovider -v -rf \
        -n "${WORKERS:-14}" --timeout "${TEST_TIMEOUT:-300}" ${PYTEST_ARGS:-} tests/kernels/test_kernel_table.py \
        tests/kernels/test_networks_triton.py tests/kernels/test_fusion.py \
        tests/kernels/test_cuda_graph.py tests/kernels/test_rnn_kernels.py \
        tests/kernels/test_optimizer_kernels.py ;;
    ops) run ops "${OPS_S:-240}" $PY -m pytest -o addopts= -p no:cacheprovider -v -rf \
        -n "${WORKERS:-14}" --timeout "${TEST_TIMEOUT:-300}" ${PYTEST_ARGS:-} tests/kernels/test_ops_gemm_triton.py \
        tests/kernels/test_ops_reduce_triton.py tests/kernels/test_ops_copy_triton.py \
        tests/kernels/test_ops_rest_triton.py tests/kernels/test_ops_expr_triton.py \
        tests/kernels/test_ops_misc_triton.py tests/kernels/test_rnn_triton.py ;;
    mlp) run mlp "${MLP_S:-90}" $PY -m symgraph.bench mlp --gpu --json "$DEST/mlp_gpu.json" ;;
    kernels) run kernels "${KERNELS_S:-240}" $PY -m symgraph.bench kernels \
        --json "$DEST/kernels_gpu.json" ${KERNEL_ARGS:-} ;;
    lstm) run lstm "${LSTM_S:-240}" $PY -m symgraph.bench lstm --gpu \
        --json "$DEST/lstm_gpu.json" ${LSTM_ARGS:-} ;;
    dist) run dist "${DIST_S:-300}" $PY -m pytest -o addopts= -p no:cacheprovider -v -rf \
        tests/test_dist_kvstore.py tests/test_dist_training.py ;;
    failing) run failing "${FAILING_S:-150}" $PY -m pytest -o addopts= -p no:cacheprovider -q \
        --tb=short -n "${WORKERS:-14}" --timeout "${TEST_TIMEOUT:-300}" ${PYTEST_K:+-k "$PYTEST_K"} ${PYTEST_ARGS:-} ;;
    *) echo "unknown stage $stage" ;;
    esac
done
