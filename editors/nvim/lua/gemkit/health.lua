-- :checkhealth gemkit: is the binary there, does the companion serve, and
-- can Gemini CLI and Claude Code find it.
local M = {}

local uv = vim.uv or vim.loop

-- Neovim 0.10 deprecates the report_* names (with a warning) that 0.7 and
-- 0.8 have; 0.9 has both.
local h = vim.health or require('health')
local start = h.start or h.report_start
local ok = h.ok or h.report_ok
local warn = h.warn or h.report_warn
local err = h.error or h.report_error
local info = h.info or h.report_info

local function exists(path)
  return path and uv.fs_stat(path) ~= nil
end

function M.check()
  local gemkit = require('gemkit')
  local cfg = gemkit.config()
  start('gemkit binary')
  local bin = vim.fn.exepath(cfg.cmd)
  if bin == '' then
    err(string.format("'%s' is not an executable on $PATH", cfg.cmd), {
      'install it from the gemkit repository: go install ./cmd/gemkit',
      "or give its full path: require('gemkit').setup({ cmd = '/path/to/gemkit' })",
    })
  else
    local out = vim.fn.systemlist({ bin, '--version' })
    if vim.v.shell_error == 0 and out[1] then
      ok(bin .. ': ' .. out[1])
    else
      err(bin .. ' --version failed: ' .. table.concat(out, ' '))
    end
  end

  start('companion')
  local st = gemkit.state()
  if not st.running then
    warn('gemkit is not running', { ':GemkitStart, or setup({ autostart = true })', ':GemkitLog shows why it stopped' })
    return
  end
  if not st.ready then
    warn('gemkit (pid ' .. tostring(st.pid) .. ') has not said it serves yet', { ':GemkitLog shows its messages' })
    return
  end
  ok(string.format('serving Gemini CLI on 127.0.0.1:%d (pid %d)', st.ready.port, st.pid))
  if exists(st.ready.discoveryFile) then
    ok('discovery file: ' .. st.ready.discoveryFile)
  else
    err('the discovery file is gone: ' .. tostring(st.ready.discoveryFile), { ':GemkitStop then :GemkitStart writes it again' })
  end
  local env = st.ready.env or {}
  if vim.env.GEMINI_CLI_IDE_SERVER_PORT == env.GEMINI_CLI_IDE_SERVER_PORT then
    ok(':terminal gets the variables that lead gemini here (the GEMINI_CLI_IDE_ ones)')
  else
    warn('$GEMINI_CLI_IDE_SERVER_PORT does not name this companion', { 'terminals opened now would lead gemini elsewhere' })
  end

  -- Gemini CLI asks "Do you want to connect Neovim to Gemini CLI?" at
  -- every start while IDE mode is off in its settings, and its Yes runs
  -- /ide install, which has no installer for Neovim (docs/editors.md).
  start('Gemini CLI')
  local home = vim.env.GEMINI_CLI_HOME
  if not home or home == '' then
    home = vim.fn.expand('~')
  end
  local settings = home .. '/.gemini/settings.json'
  local okj, s = pcall(function()
    return vim.json.decode(table.concat(vim.fn.readfile(settings), '\n'))
  end)
  if okj and type(s) == 'table' and type(s.ide) == 'table' and s.ide.enabled == true then
    ok("Gemini CLI's IDE mode is on (" .. settings .. '): gemini connects at start')
  else
    info("Gemini CLI's IDE mode is not on in " .. settings .. ' (or the file is not plain JSON): gemini asks first'
      .. ' "Do you want to connect Neovim to Gemini CLI?"; answer 3 (No, don\'t ask again), not Yes, then type /ide enable, once')
  end

  start('Qwen Code')
  local qport = env.QWEN_CODE_IDE_SERVER_PORT
  if not qport then
    info('no Qwen Code lock file is written (--qwen=false)')
  else
    local home = vim.env.QWEN_HOME
    if not home or home == '' then
      home = vim.fn.expand('~/.qwen')
    end
    local qlock = vim.fn.fnamemodify(vim.fn.expand(home), ':p'):gsub('/$', '') .. '/ide/' .. qport .. '.lock'
    if exists(qlock) then
      ok('lock file: ' .. qlock .. ' (a qwen started in the workspace finds this Neovim; IDE mode must be on in Qwen Code: /ide enable)')
    else
      err('no lock file ' .. qlock .. ': qwen cannot find this Neovim', { ':GemkitLog shows why it was not written' })
    end
  end

  start('Claude Code')
  local port = env.CLAUDE_CODE_SSE_PORT
  if not port then
    info('the Claude Code endpoint is off (--claude=false)')
    return
  end
  local dir = vim.env.CLAUDE_CONFIG_DIR
  if not dir or dir == '' then
    dir = vim.fn.expand('~/.claude')
  end
  local lock = dir .. '/ide/' .. port .. '.lock'
  if exists(lock) then
    ok(string.format('serving Claude Code on 127.0.0.1:%s; lock file: %s', port, lock))
  else
    err('no lock file ' .. lock .. ': claude started elsewhere cannot find this Neovim', { ':GemkitLog shows why it was not written' })
  end
  info('a claude started in :terminal connects by itself (CLAUDE_CODE_SSE_PORT=' .. port .. '); elsewhere, run /ide')
end

return M
