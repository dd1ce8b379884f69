-- gemkit.nvim: makes Neovim a Gemini CLI IDE companion through
-- `gemkit ide serve --editor stdio` (see docs/editor-protocol.md and
-- docs/editors.md). Written against the Neovim 0.7 API (vim.loop,
-- nvim_create_autocmd, vim.json) so that it runs on Debian 12's Neovim and
-- on current releases alike.
local M = {}

local uv = vim.uv or vim.loop -- vim.uv from Neovim 0.10
local api = vim.api

local defaults = {
  -- The gemkit binary: a name on $PATH or a full path.
  cmd = 'gemkit',
  -- Extra arguments for `gemkit ide serve`, e.g. { '-v' } for debug logs.
  args = {},
  -- Workspace folders; nil means Neovim's current directory at start.
  workspace = nil,
  ide_name = 'neovim',
  ide_display_name = 'Neovim',
  -- Start gemkit from setup(); otherwise run :GemkitStart.
  autostart = true,
  -- Send workspace/update when the global current directory changes.
  follow_cwd = true,
  -- The folders of the files reported to gemkit are watched, so that a
  -- file deleted on disk is reported at once; poll_ms > 0 checks them
  -- every poll_ms as well, for file systems whose changes the kernel
  -- does not report (network mounts). 0: the watch alone, which keeps an
  -- idle Neovim asleep (and checks on BufEnter and FocusGained).
  poll_ms = 0,
  -- How many lines of gemkit's stderr :GemkitLog keeps.
  log_lines = 500,
}

local config = vim.deepcopy(defaults)

-- All mutable state of the plugin; reset by stop().
local S = {
  handle = nil, -- uv process handle
  pid = nil,
  stdin = nil,
  stopping = false,
  ready = nil, -- params of server/ready
  partial = {}, -- chunks of an unfinished stdout line
  log = {}, -- stderr lines
  errpartial = '',
  tracked = {}, -- bufnr -> path reported to gemkit
  last = nil, -- key of the last focus/selection sent
  diffs = {}, -- filePath -> diff view
  timer = nil,
  watches = {}, -- folder -> uv fs_event handle, for the tracked files' folders
}

local function notify(msg, level)
  vim.schedule(function()
    vim.notify('gemkit: ' .. msg, level or vim.log.levels.INFO)
  end)
end

local function add_log(line)
  table.insert(S.log, line)
  if #S.log > config.log_lines then
    table.remove(S.log, 1)
  end
end

-- Protocol output ----------------------------------------------------------

local function write(msg)
  if not S.stdin or S.stdin:is_closing() then
    return false
  end
  S.stdin:write(vim.json.encode(msg) .. '\n')
  return true
end

local function send(method, params)
  return write({ jsonrpc = '2.0', method = method, params = params })
end

local function reply(id, result)
  write({ jsonrpc = '2.0', id = id, result = result })
end

local function reply_error(id, code, message)
  write({ jsonrpc = '2.0', id = id, error = { code = code, message = message } })
end

-- Positions and paths --------------------------------------------------------

-- utf16_len counts the UTF-16 code units of a UTF-8 string, the unit the
-- official VS Code companion reports characters in.
local function utf16_len(s)
  local n = 0
  for i = 1, #s do
    local b = s:byte(i)
    if b < 0x80 or b >= 0xC0 then
      n = n + (b >= 0xF0 and 2 or 1)
    end
  end
  return n
end

local function is_file(path)
  local st = path ~= '' and uv.fs_stat(path)
  return st and st.type == 'file' or false
end

-- file_path is the absolute path of a buffer that shows a file on disk, or
-- nil for scratch, help, terminal and unsaved buffers.
local function file_path(buf)
  if not api.nvim_buf_is_valid(buf) or vim.bo[buf].buftype ~= '' then
    return nil
  end
  local name = api.nvim_buf_get_name(buf)
  if name == '' or name:match('^%a[%w+.-]*://') then
    return nil
  end
  name = vim.fn.fnamemodify(name, ':p')
  if not is_file(name) then
    return nil
  end
  return name
end

local function char_len_at(s, i)
  local b = s:byte(i)
  if not b then
    return 1
  end
  if b >= 0xF0 then
    return 4
  elseif b >= 0xE0 then
    return 3
  elseif b >= 0xC0 then
    return 2
  end
  return 1
end

local max_lines = 16384

-- is_visual tells a mode (mode(), v:event.old_mode) of Visual mode apart.
local function is_visual(mode)
  local m = mode:sub(1, 1)
  return m == 'v' or m == 'V' or m == '\22'
end

-- region_text is the text of buf between positions s and e (getpos()
-- lists, either order) selected in Visual mode mode ('v', 'V' or CTRL-V).
local function region_text(buf, mode, s, e)
  local sl, sc, el, ec = s[2], s[3], e[2], e[3]
  if sl < 1 or el < 1 then
    return nil
  end
  if sl > el or (sl == el and sc > ec) then
    sl, sc, el, ec = el, ec, sl, sc
  end
  -- gemkit cuts a selection at 16384 characters: more lines than that
  -- (each at least one character with its newline) are never needed.
  local capped = el - sl > max_lines
  if capped then
    el = sl + max_lines
  end
  local lines = api.nvim_buf_get_lines(buf, sl - 1, el, false)
  if #lines == 0 then
    return nil
  end
  if mode == 'V' then
    return table.concat(lines, '\n')
  end
  if mode == 'v' then
    local last = lines[#lines]
    if not capped then
      lines[#lines] = last:sub(1, ec + char_len_at(last, ec) - 1)
    end
    lines[1] = lines[1]:sub(sc)
    return table.concat(lines, '\n')
  end
  -- Blockwise: the same byte columns of every line.
  local lo, hi = math.min(sc, ec), math.max(sc, ec)
  for i, l in ipairs(lines) do
    lines[i] = l:sub(lo, hi + char_len_at(l, hi) - 1)
  end
  return table.concat(lines, '\n')
end

-- selected_text is the text of the visual selection in the current window,
-- or nil outside visual mode.
local function selected_text(buf)
  local mode = api.nvim_get_mode().mode:sub(1, 1)
  if not is_visual(mode) then
    return nil
  end
  return region_text(buf, mode, vim.fn.getpos('v'), vim.fn.getpos('.'))
end

-- last_visual is the selection Visual mode just left in the current
-- buffer, from the '< and '> marks it set, or nil.
local function last_visual(buf)
  local mode = vim.fn.visualmode()
  if not is_visual(mode) then
    return nil
  end
  return region_text(buf, mode:sub(1, 1), vim.fn.getpos("'<"), vim.fn.getpos("'>"))
end

local function cursor_of(win, buf)
  local pos = api.nvim_win_get_cursor(win)
  local line = api.nvim_buf_get_lines(buf, pos[1] - 1, pos[1], false)[1] or ''
  return { line = pos[1], character = utf16_len(line:sub(1, pos[2])) + 1 }
end

-- Editor events ----------------------------------------------------------------

local sync_watches -- defined below, after check_deleted

-- report sends buf's file with the cursor of win (default: the current
-- window) and sel, the selected text (default: the current selection).
local function report(method, buf, win, sel)
  if not S.ready then
    return
  end
  local path = file_path(buf)
  if not path then
    return
  end
  local params = { path = path, cursor = cursor_of(win or api.nvim_get_current_win(), buf) }
  if sel == nil then
    sel = selected_text(buf)
  end
  if sel and sel ~= '' then
    params.selectedText = sel
  end
  local key = table.concat({ path, params.cursor.line, params.cursor.character, sel or '' }, '\0')
  if method == 'editor/selection' and key == S.last then
    return
  end
  if method == 'editor/focus' and key == S.last and S.tracked[buf] == path then
    return
  end
  S.last = key
  if S.tracked[buf] ~= path then
    S.tracked[buf] = path
    sync_watches()
  end
  send(method, params)
end

local function forget(buf, method)
  local path = S.tracked[buf]
  if not path then
    return
  end
  S.tracked[buf] = nil
  sync_watches()
  S.last = nil
  for _, p in pairs(S.tracked) do
    if p == path then
      return -- still shown by another buffer entry
    end
  end
  send(method or 'editor/close', { path = path })
end

-- check_deleted reports the tracked files that are gone from disk.
local function check_deleted()
  for buf, path in pairs(S.tracked) do
    if not is_file(path) then
      forget(buf, 'editor/delete')
    end
  end
end

local function close_watch(w)
  w:stop()
  if not w:is_closing() then
    w:close()
  end
end

-- on_folder_event checks the tracked files when a watched folder changes
-- (an entry made, removed or renamed: a deletion, a save by rename),
-- once for a burst of events (a build writing many files there).
local check_pending = false
local function on_folder_event()
  if check_pending then
    return
  end
  check_pending = true
  vim.schedule(function()
    check_pending = false
    if S.handle then
      check_deleted()
    end
  end)
end

-- sync_watches makes the watched folders those of the tracked files: a
-- folder's watch (inotify) sees its files deleted, and survives their
-- replacement on a save by rename, which a watch of the file would not.
-- Where a folder cannot be watched (the kernel's limit of watches), the
-- tracked files are checked every second instead.
function sync_watches()
  local want = {}
  for _, path in pairs(S.tracked) do
    want[path:match('^(.*)/[^/]*$') or '/'] = true
  end
  for dir, w in pairs(S.watches) do
    if not want[dir] then
      close_watch(w)
      S.watches[dir] = nil
    end
  end
  for dir in pairs(want) do
    if dir == '' then
      dir = '/'
    end
    if not S.watches[dir] then
      local w = uv.new_fs_event()
      if w and w:start(dir, {}, on_folder_event) then
        S.watches[dir] = w
      else
        if w then
          close_watch(w)
        end
        if not S.timer and S.handle then
          S.timer = uv.new_timer()
          S.timer:start(1000, 1000, vim.schedule_wrap(check_deleted))
        end
      end
    end
  end
end

local function reload(buf)
  if not api.nvim_buf_is_loaded(buf) or vim.bo[buf].modified then
    return
  end
  api.nvim_buf_call(buf, function()
    vim.cmd('setlocal autoread')
    vim.cmd('silent! checktime ' .. buf)
    vim.cmd('setlocal autoread<')
  end)
end

local function buffer_of(path)
  for _, buf in ipairs(api.nvim_list_bufs()) do
    if api.nvim_buf_is_loaded(buf) and vim.bo[buf].buftype == '' then
      local name = api.nvim_buf_get_name(buf)
      if name ~= '' and vim.fn.fnamemodify(name, ':p') == path then
        return buf
      end
    end
  end
end

-- Diff views -----------------------------------------------------------------

local function split_lines(s)
  local lines, pos = {}, 1
  while true do
    local nl = s:find('\n', pos, true)
    if not nl then
      table.insert(lines, s:sub(pos))
      break
    end
    table.insert(lines, s:sub(pos, nl - 1))
    pos = nl + 1
  end
  return lines
end

-- set_text fills a buffer with text, remembering whether it ended with a
-- newline in 'endofline' so that buffer_text gives the same text back.
local function set_text(buf, text)
  local eol = text:sub(-1) == '\n'
  if eol then
    text = text:sub(1, -2)
  end
  api.nvim_buf_set_lines(buf, 0, -1, false, split_lines(text))
  vim.bo[buf].fixendofline = false
  vim.bo[buf].endofline = eol
end

local function buffer_text(buf)
  local text = table.concat(api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
  if vim.bo[buf].endofline then
    text = text .. '\n'
  end
  return text
end

local function scratch(buf, name)
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'wipe'
  vim.bo[buf].swapfile = false
  if not pcall(api.nvim_buf_set_name, buf, name) then
    pcall(api.nvim_buf_set_name, buf, name .. ' ' .. buf)
  end
end

local function detect_filetype(path)
  local existing = buffer_of(path)
  if existing and vim.bo[existing].filetype ~= '' then
    return vim.bo[existing].filetype
  end
  local ft = ''
  local tmp = api.nvim_create_buf(false, true)
  api.nvim_buf_call(tmp, function()
    pcall(vim.cmd, 'silent doautocmd filetypedetect BufRead ' .. vim.fn.fnameescape(path))
    ft = vim.bo[tmp].filetype
  end)
  pcall(api.nvim_buf_delete, tmp, { force = true })
  return ft
end

-- close_view removes a diff's tab and buffers; the diff must already be
-- marked done so that the wipe does not report a rejection.
local function close_view(d)
  d.done = true
  if S.diffs[d.path] == d then
    S.diffs[d.path] = nil
  end
  if api.nvim_tabpage_is_valid(d.tab) and #api.nvim_list_tabpages() > 1 then
    pcall(vim.cmd, 'tabclose! ' .. api.nvim_tabpage_get_number(d.tab))
  end
  for _, b in ipairs({ d.left, d.right }) do
    if api.nvim_buf_is_valid(b) then
      pcall(api.nvim_buf_delete, b, { force = true })
    end
  end
end

-- resolve answers diff d; with later, its view closes once the command
-- that answered is done (:wq still has a window to quit).
local function resolve(d, accepted, later)
  if d.done then
    return
  end
  local content = accepted and buffer_text(d.right) or nil
  if later then
    d.done = true
    S.diffs[d.path] = nil
    vim.schedule(function()
      close_view(d)
    end)
  else
    close_view(d)
  end
  if accepted then
    send('diff/accepted', { filePath = d.path, content = content })
    -- Gemini CLI writes the file itself; show the new text once it has.
    vim.defer_fn(function()
      local buf = buffer_of(d.path)
      if buf then
        reload(buf)
      end
    end, 1000)
  else
    send('diff/rejected', { filePath = d.path })
  end
end

-- proposer is the status line's start for a proposal of agent (the
-- diff/open's agent, absent from an older gemkit or an unknown client).
local function proposer(agent)
  if type(agent) == 'string' and agent ~= '' then
    return 'Proposed by ' .. agent:gsub('%%', '%%%%') .. ': '
  end
  return 'Proposed: '
end

local function open_diff(path, content, agent)
  if S.diffs[path] then
    close_view(S.diffs[path]) -- a new proposal replaces the old view
  end
  local ft = detect_filetype(path)
  local on_disk = is_file(path)
  vim.cmd('tabnew')
  local d = { path = path, tab = api.nvim_get_current_tabpage(), done = false }
  d.left = api.nvim_get_current_buf()
  local left_win = api.nvim_get_current_win()
  scratch(d.left, 'gemkit://' .. path .. (on_disk and ' [on disk]' or ' [new file]'))
  if on_disk then
    -- readfile() gives a NUL byte as "\n"; buffers take it as "\0".
    local lines = vim.fn.readfile(path, 'b')
    for i, l in ipairs(lines) do
      lines[i] = l:gsub('\n', '\0')
    end
    set_text(d.left, table.concat(lines, '\n'))
  else
    set_text(d.left, '')
  end
  vim.bo[d.left].modifiable = false
  vim.bo[d.left].readonly = true
  vim.cmd('rightbelow vertical new')
  d.right = api.nvim_get_current_buf()
  scratch(d.right, 'gemkit://' .. path .. ' [proposed]')
  set_text(d.right, content)
  vim.bo[d.right].modified = false
  -- :w accepts (:wq and :x too), as in claudecode.nvim; nothing is
  -- written here: the agent writes the file.
  vim.bo[d.right].buftype = 'acwrite'
  api.nvim_create_autocmd('BufWriteCmd', {
    buffer = d.right,
    callback = function()
      vim.bo[d.right].modified = false
      resolve(d, true, true)
    end,
  })
  -- The proposal's status line says how to answer.
  vim.wo.statusline = proposer(agent) .. vim.fn.fnamemodify(path, ':~:.'):gsub('%%', '%%%%')
    .. '%=:w accepts (with your edits), :q rejects '
  for _, w in ipairs({ left_win, api.nvim_get_current_win() }) do
    api.nvim_win_call(w, function()
      vim.cmd('diffthis')
    end)
  end
  api.nvim_buf_set_var(d.right, 'gemkit_diff', path)
  api.nvim_buf_set_var(d.left, 'gemkit_diff', path)
  -- Closing the proposal in any way (:q, :tabclose, :bwipeout) rejects it.
  api.nvim_create_autocmd('BufWipeout', {
    buffer = d.right,
    once = true,
    callback = function()
      if not d.done then
        vim.schedule(function()
          resolve(d, false)
        end)
      end
    end,
  })
  S.diffs[path] = d
  vim.cmd('redraw')
  -- The language's files load once the view is on screen, in the next
  -- turn of the event loop: they were most of the time a diff took to
  -- draw (the proposal's filetype, 2 ms of the 4 ms of a plain text
  -- file's diff, stamped in Neovim 0.10; a Go file's more). The proposal
  -- gets its filetype (ftplugin, indent, syntax: it is edited), then
  -- diffthis again, so that the diff's own window options win over an
  -- ftplugin's (a FileType autocommand setting foldmethod, say), as when
  -- the filetype came first. The read-only side gets the language's
  -- highlighting only: its filetype would load ftplugins and wake
  -- language servers for a copy no one edits.
  if ft ~= '' then
    vim.schedule(function()
      if api.nvim_buf_is_valid(d.right) then
        vim.bo[d.right].filetype = ft
        for _, w in ipairs(vim.fn.win_findbuf(d.right)) do
          api.nvim_win_call(w, function()
            vim.cmd('diffthis')
          end)
        end
      end
      if api.nvim_buf_is_valid(d.left) then
        vim.bo[d.left].syntax = ft
      end
      vim.cmd('redraw') -- at once, not when Neovim next waits for input
    end)
  end
  return d
end

-- current_diff is the diff the command applies to: the one shown in the
-- current buffer, else the only open one.
local function current_diff()
  local ok, path = pcall(api.nvim_buf_get_var, 0, 'gemkit_diff')
  if ok and S.diffs[path] then
    return S.diffs[path]
  end
  local only, n = nil, 0
  for _, d in pairs(S.diffs) do
    only, n = d, n + 1
  end
  if n == 1 then
    return only
  end
  if n == 0 then
    notify('no diff is open', vim.log.levels.WARN)
  else
    notify('several diffs are open: run the command in the diff you mean', vim.log.levels.WARN)
  end
end

-- Protocol input --------------------------------------------------------------

local function set_env(env, on)
  for k, v in pairs(env or {}) do
    vim.env[k] = on and v or nil
  end
end

local handlers = {}

handlers['server/ready'] = function(params)
  S.ready = params
  set_env(params.env, true)
  S.last = nil
  report('editor/focus', api.nvim_get_current_buf())
  vim.cmd('silent doautocmd <nomodeline> User GemkitReady')
end

handlers['file/written'] = function(params)
  local buf = type(params.path) == 'string' and buffer_of(params.path)
  if buf then
    reload(buf)
  end
end

-- when_free runs fn once no command line, prompt or pending operator
-- holds the screen (windows cannot change then), trying for up to 25 s so
-- that gemkit still gets its answer within its 30 s.
local function when_free(fn, tries)
  tries = tries or 0
  local m = api.nvim_get_mode()
  local busy = m.blocking or m.mode:match('^[cr]') or m.mode:match('^no')
  if busy and tries < 250 then
    vim.defer_fn(function()
      when_free(fn, tries + 1)
    end, 100)
    return
  end
  fn()
end

handlers['diff/open'] = function(params, id)
  if type(params.filePath) ~= 'string' or type(params.newContent) ~= 'string' then
    return reply_error(id, -32602, 'diff/open needs filePath and newContent strings')
  end
  when_free(function()
    local ok, err = pcall(open_diff, params.filePath, params.newContent, params.agent)
    if not ok then
      return reply_error(id, -32000, 'cannot show the diff in Neovim: ' .. tostring(err))
    end
    reply(id, vim.empty_dict())
  end)
end

handlers['diff/close'] = function(params, id)
  local d = type(params.filePath) == 'string' and S.diffs[params.filePath]
  if not d then
    return reply(id, { content = vim.NIL })
  end
  local content = buffer_text(d.right)
  d.done = true -- no outcome for this view, even if closing it waits
  S.diffs[d.path] = nil
  reply(id, { content = content })
  when_free(function()
    close_view(d)
  end)
end

-- diagnostics/get: what vim.diagnostic holds, for one file or for every
-- loaded buffer that is a file, in the protocol's 1-based positions.
local severities = { 'error', 'warning', 'info', 'hint' }

-- utf16_col turns a byte column of vim.diagnostic (0-based) on line lnum
-- of buf into the protocol's 1-based UTF-16 character.
local function utf16_col(buf, lnum, col)
  local line = api.nvim_buf_get_lines(buf, lnum, lnum + 1, false)[1]
  if not line then
    return col + 1
  end
  return utf16_len(line:sub(1, col)) + 1
end

local function diagnostics_of(buf, path)
  local out = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    local end_lnum = d.end_lnum or d.lnum
    table.insert(out, {
      message = d.message,
      severity = severities[d.severity] or 'info',
      source = d.source,
      code = d.code ~= nil and tostring(d.code) or nil,
      range = {
        start = { line = d.lnum + 1, character = utf16_col(buf, d.lnum, d.col) },
        ['end'] = { line = end_lnum + 1, character = utf16_col(buf, end_lnum, d.end_col or d.col) },
      },
    })
  end
  return { path = path, diagnostics = out }
end

handlers['diagnostics/get'] = function(params, id)
  local files = {}
  if type(params.path) == 'string' then
    local buf = buffer_of(params.path)
    table.insert(files, buf and diagnostics_of(buf, params.path) or { path = params.path, diagnostics = {} })
  else
    for _, buf in ipairs(api.nvim_list_bufs()) do
      local path = api.nvim_buf_is_loaded(buf) and file_path(buf)
      if path then
        table.insert(files, diagnostics_of(buf, path))
      end
    end
  end
  reply(id, { files = files }) -- an empty Lua table encodes as []
end

-- The language clients lent to gemkit's code-intelligence tools (lsp/*,
-- and diagnostics/get's settle): lua/gemkit/lsp.lua.
require('gemkit.lsp').register(handlers, { reply = reply, reply_error = reply_error, buffer_of = buffer_of })

local function handle_line(line)
  local ok, msg = pcall(vim.json.decode, line)
  if not ok or type(msg) ~= 'table' then
    add_log('unreadable line from gemkit: ' .. line:sub(1, 200))
    return
  end
  local id = msg.id
  if id == vim.NIL then
    id = nil
  end
  if type(msg.method) ~= 'string' then
    if msg.error and msg.error ~= vim.NIL then
      add_log('gemkit answered an error: ' .. tostring(msg.error.message))
    end
    return
  end
  local h = handlers[msg.method]
  local params = msg.params
  if params == vim.NIL or type(params) ~= 'table' then
    params = {}
  end
  if not h then
    if id then
      reply_error(id, -32601, 'Method not found: ' .. msg.method)
    end
    return
  end
  local hok, herr = pcall(h, params, id)
  if not hok then
    add_log('handling ' .. msg.method .. ': ' .. tostring(herr))
    if id then
      reply_error(id, -32603, tostring(herr))
    end
  end
end

-- on_stdout splits gemkit's output into lines; chunks are kept in a table
-- so that a large diff is joined once.
local function on_stdout(err, data)
  if err or not data then
    return
  end
  local start = 1
  while true do
    local nl = data:find('\n', start, true)
    if not nl then
      if start <= #data then
        table.insert(S.partial, data:sub(start))
      end
      return
    end
    table.insert(S.partial, data:sub(start, nl - 1))
    local line = table.concat(S.partial)
    S.partial = {}
    start = nl + 1
    if line ~= '' then
      vim.schedule(function()
        handle_line(line)
      end)
    end
  end
end

local function on_stderr(err, data)
  if err or not data then
    return
  end
  local text = S.errpartial .. data
  local lines = {}
  for l in text:gmatch('([^\n]*)\n') do
    table.insert(lines, l)
  end
  S.errpartial = text:match('[^\n]*$') or ''
  vim.schedule(function()
    for _, l in ipairs(lines) do
      add_log(l)
    end
  end)
end

local registered = false
local autocmds -- defined under Setup

-- Start and stop ---------------------------------------------------------------

local function close_handle(h)
  if h and not h:is_closing() then
    h:close()
  end
end

function M.is_running()
  return S.handle ~= nil
end

function M.start()
  if S.handle then
    return true
  end
  if not registered then
    autocmds()
  end
  local workspace = config.workspace or { vim.fn.getcwd() }
  local args = { 'ide', 'serve', '--editor', 'stdio', '--ide-name', config.ide_name,
    '--ide-display-name', config.ide_display_name, '--ide-pid', tostring(vim.fn.getpid()) }
  for _, w in ipairs(workspace) do
    local dir = vim.fn.fnamemodify(w, ':p')
    if #dir > 1 then
      dir = dir:gsub('/$', '')
    end
    table.insert(args, '--workspace')
    table.insert(args, dir)
  end
  vim.list_extend(args, config.args or {})
  local stdin, stdout, stderr = uv.new_pipe(false), uv.new_pipe(false), uv.new_pipe(false)
  S.partial, S.errpartial, S.stopping = {}, '', false
  local handle, pid
  handle, pid = uv.spawn(config.cmd, { args = args, stdio = { stdin, stdout, stderr } }, function(code, signal)
    close_handle(stdin)
    close_handle(stdout)
    close_handle(stderr)
    close_handle(handle)
    vim.schedule(function()
      local expected = S.stopping
      if S.ready then
        set_env(S.ready.env, false)
      end
      S.handle, S.pid, S.stdin, S.ready = nil, nil, nil, nil
      if not expected then
        local tail = table.concat(vim.list_slice(S.log, math.max(1, #S.log - 4)), '\n')
        notify(string.format('gemkit stopped (exit %d, signal %d)\n%s', code, signal, tail), vim.log.levels.ERROR)
      end
      vim.cmd('silent doautocmd <nomodeline> User GemkitStopped')
    end)
  end)
  if not handle then
    close_handle(stdin)
    close_handle(stdout)
    close_handle(stderr)
    notify(string.format("cannot start '%s' (%s); set require('gemkit').setup{ cmd = '/path/to/gemkit' }",
      config.cmd, tostring(pid)), vim.log.levels.ERROR)
    return false
  end
  S.handle, S.pid, S.stdin, S.tracked, S.last = handle, pid, stdin, {}, nil
  sync_watches() -- none: a companion that ended on its own left its watches
  stdout:read_start(on_stdout)
  stderr:read_start(on_stderr)
  if config.poll_ms and config.poll_ms > 0 then
    S.timer = uv.new_timer()
    S.timer:start(config.poll_ms, config.poll_ms, vim.schedule_wrap(check_deleted))
  end
  return true
end

-- stop closes gemkit's stdin, which makes it remove its discovery file and
-- exit, and waits up to timeout_ms for that (then kills it).
function M.stop(timeout_ms)
  if S.timer then
    S.timer:stop()
    close_handle(S.timer)
    S.timer = nil
  end
  for dir, w in pairs(S.watches) do
    close_watch(w)
    S.watches[dir] = nil
  end
  if not S.handle then
    return
  end
  S.stopping = true
  -- Open views stay as inert scratch buffers: the new gemkit would not
  -- know their diffs.
  for _, d in pairs(S.diffs) do
    d.done = true
  end
  S.diffs = {}
  local stdin = S.stdin
  S.stdin = nil
  if stdin and not stdin:is_closing() then
    stdin:shutdown(function()
      close_handle(stdin)
    end)
  end
  local handle = S.handle
  local gone = vim.wait(timeout_ms or 2000, function()
    return handle:is_closing()
  end, 10)
  if not gone and not handle:is_closing() then
    handle:kill('sigterm')
  end
end

function M.status()
  if not S.handle then
    return 'gemkit is not running'
  end
  if not S.ready then
    return 'gemkit is starting (pid ' .. tostring(S.pid) .. ')'
  end
  local diffs = {}
  for p in pairs(S.diffs) do
    table.insert(diffs, p)
  end
  -- Every endpoint the companion serves (server/ready's endpoints; an
  -- older gemkit names Gemini CLI's only).
  local lines = {}
  local endpoints = type(S.ready.endpoints) == 'table' and S.ready.endpoints or {}
  if #endpoints == 0 then
    endpoints = { { agent = 'Gemini CLI', port = S.ready.port, file = S.ready.discoveryFile } }
  end
  for _, e in ipairs(endpoints) do
    local kind = e.agent == 'Gemini CLI' and 'discovery file' or 'lock file'
    table.insert(lines, string.format('gemkit serves %s on 127.0.0.1:%s (%s %s)', e.agent, tostring(e.port), kind, e.file))
  end
  return string.format('%s\npid %d; open diffs: %s',
    table.concat(lines, '\n'), S.pid, #diffs > 0 and table.concat(diffs, ', ') or 'none')
end

-- state is for tests and statuslines: a copy of what the plugin knows.
function M.state()
  local diffs = {}
  for p, d in pairs(S.diffs) do
    diffs[p] = { left = d.left, right = d.right, tab = d.tab }
  end
  return { running = S.handle ~= nil, pid = S.pid, ready = S.ready, diffs = diffs }
end

-- config is a copy of the settings in force (for :checkhealth gemkit).
function M.config()
  return vim.deepcopy(config)
end

function M.accept()
  local d = current_diff()
  if d then
    resolve(d, true)
  end
end

function M.reject()
  local d = current_diff()
  if d then
    resolve(d, false)
  end
end

-- mention @-mentions the current file in Claude Code's prompt, with the
-- lines line1..line2 (1-based) when given (a range or the visual
-- selection of :GemkitMention).
function M.mention(line1, line2)
  if not S.handle then
    notify('gemkit is not running: :GemkitStart', vim.log.levels.WARN)
    return
  end
  local path = file_path(api.nvim_get_current_buf())
  if not path then
    notify('this buffer is not a file on disk', vim.log.levels.WARN)
    return
  end
  local params = { path = path }
  if line1 and line2 then
    params.lineStart, params.lineEnd = math.min(line1, line2), math.max(line1, line2)
  end
  send('editor/mention', params)
end

function M.show_log()
  vim.cmd('new')
  local buf = api.nvim_get_current_buf()
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'wipe'
  api.nvim_buf_set_lines(buf, 0, -1, false, S.log)
end

-- Setup ------------------------------------------------------------------------

function autocmds()
  registered = true
  local group = api.nvim_create_augroup('gemkit', { clear = true })
  local function au(events, fn)
    api.nvim_create_autocmd(events, { group = group, callback = fn })
  end
  au({ 'BufEnter', 'WinEnter', 'FocusGained' }, function(ev)
    if not S.ready then
      return
    end
    check_deleted()
    report('editor/focus', api.nvim_get_current_buf())
  end)
  au('BufWritePost', function(ev)
    if S.ready and ev.buf == api.nvim_get_current_buf() and not S.tracked[ev.buf] then
      report('editor/focus', ev.buf) -- a new file now exists on disk
    end
  end)
  local function selection_changed()
    if S.ready then
      report('editor/selection', api.nvim_get_current_buf())
    end
  end
  au({ 'CursorMoved', 'CursorMovedI' }, selection_changed)
  if vim.fn.exists('##ModeChanged') == 1 then
    au('ModeChanged', function()
      -- A window command typed in Visual mode (<C-w>l into the terminal
      -- where the agent runs, a mouse click) ends Visual mode while the
      -- file's window is still current, and only then moves. Deciding once
      -- the command is done keeps the selection when focus went to a
      -- window without a file, as VS Code keeps an editor's selection
      -- while its terminal has focus; Esc in the file still drops it.
      -- The selection is the one Visual mode ended with: keys typed
      -- ahead (V j <C-w>l at once) move the cursor without CursorMoved.
      local ev = vim.v.event
      if not (is_visual(ev.old_mode) and not is_visual(ev.new_mode)) then
        return selection_changed()
      end
      local buf, win = api.nvim_get_current_buf(), api.nvim_get_current_win()
      local sel = file_path(buf) and last_visual(buf)
      vim.schedule(function()
        if sel and api.nvim_buf_is_valid(buf) and api.nvim_win_is_valid(win)
          and not file_path(api.nvim_get_current_buf()) then
          report('editor/selection', buf, win, sel)
        else
          selection_changed()
        end
      end)
    end)
  end
  au({ 'BufDelete', 'BufWipeout' }, function(ev)
    if S.ready and S.tracked[ev.buf] then
      forget(ev.buf, is_file(S.tracked[ev.buf]) and 'editor/close' or 'editor/delete')
    end
  end)
  au('BufFilePost', function(ev)
    local old = S.tracked[ev.buf]
    if not S.ready or not old then
      return
    end
    local new = vim.fn.fnamemodify(api.nvim_buf_get_name(ev.buf), ':p')
    if new ~= old then
      S.tracked[ev.buf] = new
      sync_watches()
      S.last = nil
      send('editor/rename', { oldPath = old, newPath = new })
    end
  end)
  au('DirChanged', function()
    if S.ready and config.follow_cwd and config.workspace == nil and vim.v.event.scope == 'global' then
      local cwd = vim.fn.getcwd()
      send('workspace/update', { paths = { cwd } })
      -- Terminals opened from now on name the new workspace too (Qwen
      -- Code's variable when gemkit gave it).
      vim.env.GEMINI_CLI_IDE_WORKSPACE_PATH = cwd
      if (S.ready.env or {}).QWEN_CODE_IDE_WORKSPACE_PATH then
        vim.env.QWEN_CODE_IDE_WORKSPACE_PATH = cwd
      end
    end
  end)
  au('VimLeavePre', function()
    M.stop(2000)
  end)
end

function M.setup(opts)
  config = vim.tbl_deep_extend('force', vim.deepcopy(defaults), opts or {})
  autocmds()
  if config.autostart then
    M.start()
  end
end

return M
