#!/usr/bin/env bash
# Serve SOURCE... on 127.0.0.1 as production would, on one machine: Redis, three replicas
# of `toolsets serve --http` sharing it and one request-state key, and HAProxy in front
# (haproxy.cfg beside this script). Runs until stopped (Ctrl-C, SIGTERM), then stops them
# all.
#
#   examples/deploy/run.sh openapi.json --base-url https://api.example.com
#   # clients use http://127.0.0.1:8000/mcp
#
# Settings (environment):
#   MCP_LB_PORT          HAProxy's port (default 8000)
#   MCP_REPLICA_PORTS    the three replicas' ports (default "8001 8002 8003")
#   REDIS_PORT           Redis' port (default 6380)
#   TOOLSETS_MCP_STATE_KEY  the key sealing a confirmation's state (default: a new one,
#                        for this run; give one to replicas started elsewhere)
#   TOOLSETS             the command that runs toolsets (default "toolsets")
#   DEPLOY_RUN_DIR       where each process's pid and log go (default: a new directory)
# Needs haproxy and redis-server on PATH (Debian: apt-get install haproxy redis-server)
# and `pip install 'toolsets-ai[cli,redis]'`.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ "$#" -eq 0 ]; then
    echo "usage: $0 SOURCE... [toolsets serve options]" >&2
    exit 2
fi
lb_port="${MCP_LB_PORT:-8000}"
read -r -a replica_ports <<<"${MCP_REPLICA_PORTS:-8001 8002 8003}"
if [ "${#replica_ports[@]}" -ne 3 ]; then
    echo "MCP_REPLICA_PORTS must name three ports (haproxy.cfg has three servers)" >&2
    exit 2
fi
redis_port="${REDIS_PORT:-6380}"
read -r -a toolsets <<<"${TOOLSETS:-toolsets}"
run_dir="${DEPLOY_RUN_DIR:-$(mktemp -d -t toolsets-deploy.XXXXXX)}"
mkdir -p "$run_dir"
if [ -z "${TOOLSETS_MCP_STATE_KEY:-}" ]; then
    TOOLSETS_MCP_STATE_KEY="$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')"
fi
export TOOLSETS_MCP_STATE_KEY

pids=()
stop() {
    trap - EXIT INT TERM
    for pid in "${pids[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    wait 2>/dev/null || true
}
trap stop EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

started() {  # $1: name; the last background process's pid
    pids+=("$!")
    echo "$!" >"$run_dir/$1.pid"
}

# Redis: the request states taken, shared by the replicas. No persistence: what it holds
# lives no longer than a confirmation's state (600 s).
redis-server --bind 127.0.0.1 --port "$redis_port" --save "" --appendonly no \
    >"$run_dir/redis.log" 2>&1 &
started redis

for i in 1 2 3; do
    port="${replica_ports[$((i - 1))]}"
    "${toolsets[@]}" serve "$@" --http "127.0.0.1:$port" \
        --redis "redis://127.0.0.1:$redis_port/0" >"$run_dir/replica$i.log" 2>&1 &
    started "replica$i"
done

MCP_LB_ADDRESS="127.0.0.1:$lb_port" \
    MCP_LB_STATS_SOCKET="$run_dir/haproxy.sock" \
    MCP_REPLICA_1="127.0.0.1:${replica_ports[0]}" \
    MCP_REPLICA_2="127.0.0.1:${replica_ports[1]}" \
    MCP_REPLICA_3="127.0.0.1:${replica_ports[2]}" \
    haproxy -db -f "$here/haproxy.cfg" >"$run_dir/haproxy.log" 2>&1 &
started haproxy

echo "serving on http://127.0.0.1:$lb_port/mcp (replicas on ${replica_ports[*]}, Redis on $redis_port; logs and pids in $run_dir)"
# Until stopped; one part ending (a replica killed) leaves the others serving.
wait
