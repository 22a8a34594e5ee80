#!/usr/bin/env bash
# A static server that streams one fixed 256-token completion at wire speed: nginx (Debian's
# package) serving a pre-rendered vLLM-shaped SSE body for every POST. The client-efficiency
# benchmark (docs/performance.md) runs slotest against it, so every CPU cycle measured is the
# client's own.
#
#   scripts/static-sse.sh start [PORT]   # default 8090; installs nginx if missing
#   scripts/static-sse.sh stop
set -euo pipefail
port="${2:-8090}"
dir="${SLOTEST_STATIC_DIR:-${TMPDIR:-/tmp}/slotest-static-sse}"
tokens="${SLOTEST_STATIC_TOKENS:-256}"

render() {
  mkdir -p "$dir/www/v1" "$dir/logs"
  local body="$dir/www/v1/completions"
  : >"$body"
  for i in $(seq 1 "$tokens"); do
    local finish=null
    [ "$i" -eq "$tokens" ] && finish='"length"'
    printf 'data: {"id":"cmpl-static","object":"text_completion","created":0,"model":"static","choices":[{"index":0,"text":" tok%d","logprobs":null,"finish_reason":%s}]}\n\n' "$i" "$finish" >>"$body"
  done
  printf 'data: {"id":"cmpl-static","object":"text_completion","created":0,"model":"static","choices":[],"usage":{"prompt_tokens":16,"completion_tokens":%d,"total_tokens":%d}}\n\n' "$tokens" $((tokens + 16)) >>"$body"
  printf 'data: [DONE]\n\n' >>"$body"
  printf '{"object":"list","data":[{"id":"static","object":"model","owned_by":"static"}]}' >"$dir/www/v1/models"
  cat >"$dir/nginx.conf" <<CONF
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/logs/error.log warn;
daemon on;
events { worker_connections 1024; }
http {
  access_log off;
  keepalive_requests 1000000;
  keepalive_timeout 60s;
  client_body_buffer_size 64k;
  server {
    listen 127.0.0.1:$port;
    root $dir/www;
    location = /v1/completions { default_type text/event-stream; error_page 405 =200 \$uri; }
    location = /v1/models { default_type application/json; }
  }
}
CONF
}

case "${1:-}" in
  start)
    command -v nginx >/dev/null || PATH="$PATH:/usr/sbin"
    command -v nginx >/dev/null || { apt-get install -y nginx-light >/dev/null 2>&1 || apt-get install -y nginx >/dev/null; }
    render
    nginx -c "$dir/nginx.conf" -p "$dir" -e "$dir/logs/error.log"
    for _ in $(seq 50); do curl -sf -X POST "http://127.0.0.1:$port/v1/completions" -o /dev/null && break; sleep 0.1; done
    echo "static SSE server on http://127.0.0.1:$port ($tokens tokens, $(wc -c <"$dir/www/v1/completions") bytes per response)"
    ;;
  stop)
    [ -f "$dir/nginx.pid" ] && kill "$(cat "$dir/nginx.pid")" 2>/dev/null || true
    ;;
  *) echo "usage: $0 start [PORT] | stop" >&2; exit 2 ;;
esac
