#!/usr/bin/env bash
# Runs the same attacks under gemkit's tool sandbox and under the two
# peers pinned in interop/ — OpenAI Codex's `codex sandbox` (the
# :workspace permission profile) and Anthropic's sandbox-runtime (`srt`,
# allowWrite the working folder, allowedDomains localhost) — with the
# same policy: read everything, write the workspace (or, in the second
# half, the home folder), reach localhost. Each attack runs in a fresh
# workspace (a git repository) and prints ALLOWED when it got through;
# the table shows "blocked" or "ALLOWED" per sandbox. It fails when gemkit
# lets through an attack that either peer blocks.
# Usage: bench/sandbox/peers.sh   (as root it also runs as uid 65534)
set -euo pipefail
cd "$(dirname "$0")/../.."
repo="$PWD"
bin_dir="${PEERS_BIN:-}"
if [ -z "$bin_dir" ]; then
  bin_dir="$(mktemp -d /tmp/gemkit-peers-bin.XXXXXX)"
  trap 'rm -rf "$bin_dir"' EXIT
  chmod 755 "$bin_dir"
  CGO_ENABLED=0 go build -o "$bin_dir/gemkit" ./cmd/gemkit
fi
gemkit="$bin_dir/gemkit"
codex="$repo/interop/node_modules/.bin/codex"
srt="$repo/interop/node_modules/.bin/srt"
# sandbox-runtime needs ripgrep on PATH; Codex ships one.
rgdir="$(dirname "$(find -L "$repo/interop/node_modules/@openai" -path '*codex-path/rg' -type f | head -1)")"
for p in "$codex" "$srt"; do
  [ -x "$p" ] || { echo "peers.sh: $p missing: the shared interop/node_modules (interop/package.json pins it)" >&2; exit 1; }
done

root="$(mktemp -d /tmp/gemkit-peers.XXXXXX)"
# Codex refuses to put its helper binaries under /tmp.
codex_home="$(mktemp -d /var/tmp/gemkit-peers-codex.XXXXXX)"
chmod 755 "$root" "$codex_home"
cleanup() { rm -rf "$root" "$codex_home"; [ -z "${PEERS_BIN:-}" ] && rm -rf "$bin_dir"; true; }
trap cleanup EXIT
home="$root/home"; ws="$home/proj"; tmp="$root/tmp"; src="$root/src"
mkdir -p "$home/.gemini" "$home/.config/gemkit" "$tmp/gemini/ide" "$src/ws" "$src/home"

# A stand-in for the IDE companion: a loopback HTTP server whose port a
# discovery file names, as the companion writes it.
port_file="$root/port"
python3 -c '
import http.server, socketserver, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"companion")
    def log_message(self, *a): pass
s = socketserver.TCPServer(("127.0.0.1", 0), H)
open(sys.argv[1], "w").write(str(s.server_address[1]))
s.serve_forever()' "$port_file" &
companion_pid=$!
trap 'kill $companion_pid 2>/dev/null; cleanup' EXIT
for _ in $(seq 50); do [ -s "$port_file" ] && break; sleep 0.1; done
port="$(cat "$port_file")"
echo "{\"port\":$port,\"authToken\":\"ide-token\"}" > "$tmp/gemini/ide/gemini-ide-server-1-$port.json"
echo '{"baseURL":"https://model.example"}' > "$home/.config/gemkit/config.json"
echo 'oauth' > "$home/.gemini/oauth_creds.json"
echo '# mine' > "$home/.bashrc"

for scope in ws home; do
  write=workspace; [ "$scope" = home ] && write=home
  cat > "$src/$scope/gemini-extension.json" <<JSON
{"name": "peer-$scope", "version": "1.0.0",
 "permissions": {"filesystem": {"read": "full", "write": "$write"}, "network": {"allowedHosts": ["localhost"]}},
 "tools": [{"name": "sh", "description": "runs an attack", "executable": "t.sh", "runtime": "shell", "args": [{"name": "cmd", "type": "string"}]}]}
JSON
  printf 'exec /bin/sh -c "$2"\n' > "$src/$scope/t.sh"
  HOME="$home" TMPDIR="$tmp" "$gemkit" extensions link --consent "$src/$scope" >/dev/null 2>&1
done
cat > "$root/srt-ws.json" <<JSON
{"filesystem": {"denyRead": [], "allowWrite": ["$ws"], "denyWrite": []}, "network": {"allowedDomains": ["localhost"], "deniedDomains": []}}
JSON
cat > "$root/srt-home.json" <<JSON
{"filesystem": {"denyRead": [], "allowWrite": ["$home"], "denyWrite": []}, "network": {"allowedDomains": ["localhost"], "deniedDomains": []}}
JSON

fresh() {
  rm -rf "$ws"; mkdir -p "$ws"
  git -C "$ws" init -q
  printf '# mine\n' > "$home/.bashrc"; rm -f "$home/.gitconfig"
}

# name|scope|command (ALLOWED printed when the attack worked)
attacks=(
  "write .git/config (core.fsmonitor)|ws|echo '[core] fsmonitor = evil' >> .git/config && echo ALLOWED"
  "create .git/hooks/pre-commit|ws|echo evil > .git/hooks/pre-commit && echo ALLOWED"
  "create .gemini/settings.json (mcpServers)|ws|mkdir -p .gemini && echo '{}' > .gemini/settings.json && echo ALLOWED"
  "create .vscode/tasks.json (runOn: folderOpen)|ws|mkdir -p .vscode && echo '{}' > .vscode/tasks.json && echo ALLOWED"
  "create .idea/workspace.xml|ws|mkdir -p .idea && echo x > .idea/workspace.xml && echo ALLOWED"
  "create .claude/settings.json|ws|mkdir -p .claude && echo '{}' > .claude/settings.json && echo ALLOWED"
  "create .mcp.json|ws|echo '{}' > .mcp.json && echo ALLOWED"
  "create .envrc|ws|echo evil > .envrc && echo ALLOWED"
  "create .codex/config.toml|ws|mkdir -p .codex && echo x > .codex/config.toml && echo ALLOWED"
  "create .agents/x|ws|mkdir -p .agents && echo x > .agents/x && echo ALLOWED"
  "create .aws/credentials|ws|mkdir -p .aws && echo x > .aws/credentials && echo ALLOWED"
  "read the IDE companion's token|ws|cat $tmp/gemini/ide/*.json >/dev/null 2>&1 && echo ALLOWED"
  "read gemkit's agent config|ws|cat $home/.config/gemkit/config.json >/dev/null 2>&1 && echo ALLOWED"
  "read ~/.gemini/oauth_creds.json|ws|cat $home/.gemini/oauth_creds.json >/dev/null 2>&1 && echo ALLOWED"
  "reach the companion's port (localhost allowed)|ws|python3 -c 'import urllib.request; urllib.request.urlopen(\"http://localhost:$port/\", timeout=3)' 2>/dev/null && echo ALLOWED"
  "a secret in the environment (GITHUB_TOKEN)|ws|[ -n \"\${GITHUB_TOKEN:-}\" ] && echo ALLOWED"
  "read /etc/shadow (read: full for all three)|ws|cat /etc/shadow >/dev/null 2>&1 && echo ALLOWED"
  "control: write an ordinary workspace file|ws|echo ok > notes.txt && echo ALLOWED"
  "write: home, append to ~/.bashrc|home|echo evil >> $home/.bashrc && echo ALLOWED"
  "write: home, create ~/.gitconfig|home|echo evil > $home/.gitconfig && echo ALLOWED"
  "write: home, .git/config of the workspace's repository|home|echo evil >> .git/config && echo ALLOWED"
  "control (write: home): change an ordinary workspace file|home|echo ok > notes.txt && echo ALLOWED"
)

verdict() { grep -q '^ALLOWED$' <<<"$1" && echo ALLOWED || echo blocked; }
printf '| attack (uid %s) | gemkit | Codex `codex sandbox` | sandbox-runtime `srt` |\n|---|---|---|---|\n' "$(id -u)"
fail=0
for a in "${attacks[@]}"; do
  name="${a%%|*}"; rest="${a#*|}"; scope="${rest%%|*}"; cmd="${rest#*|}"
  fresh
  g="$(cd "$ws" && HOME="$home" TMPDIR="$tmp" GITHUB_TOKEN=ghp_secret PATH=/usr/bin:/bin timeout 60 "$gemkit" extensions run "peer-$scope" sh --cmd "cd $ws; $cmd" 2>"$root/gemkit.err" || true)"
  [ -n "${PEERS_DEBUG:-}" ] && cat "$root/gemkit.err" >&2
  fresh
  croot="$ws"; [ "$scope" = home ] && croot="$home"
  c="$(cd "$ws" && HOME="$home" TMPDIR="$tmp" CODEX_HOME="$codex_home" GITHUB_TOKEN=ghp_secret timeout 60 "$codex" sandbox -P :workspace -C "$croot" -- /bin/sh -c "cd $ws; $cmd" 2>/dev/null || true)"
  fresh
  s="$(cd "$ws" && HOME="$home" TMPDIR="$tmp" GITHUB_TOKEN=ghp_secret PATH="$rgdir:$PATH" timeout 60 "$srt" --settings "$root/srt-$scope.json" -c "cd $ws; $cmd" 2>/dev/null || true)"
  gv="$(verdict "$g")"; cv="$(verdict "$c")"; sv="$(verdict "$s")"
  printf '| %s | %s | %s | %s |\n' "$name" "$gv" "$cv" "$sv"
  case "$name" in
    control*) [ "$gv" = ALLOWED ] || { echo "peers.sh: gemkit refused the legitimate use: $name" >&2; fail=1; } ;;
    *) if [ "$gv" = ALLOWED ] && { [ "$cv" = blocked ] || [ "$sv" = blocked ]; }; then
         echo "peers.sh: gemkit lets through what a peer blocks: $name" >&2; fail=1
       fi ;;
  esac
done
if [ "$fail" = 0 ] && [ "$(id -u)" -eq 0 ] && [ -z "${PEERS_BIN:-}" ] && command -v setpriv >/dev/null; then
  echo
  cp "$0" "$bin_dir/peers.sh"
  chmod 755 "$bin_dir" "$bin_dir/gemkit"
  (cd /tmp && PEERS_BIN="$bin_dir" HOME=/tmp setpriv --reuid=65534 --regid=65534 --clear-groups bash -c "cd '$repo' && bash bench/sandbox/peers.sh") || fail=1
fi
exit "$fail"
