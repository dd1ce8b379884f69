-- gemkit.lsp: lends Neovim's language clients (vim.lsp) to gemkit's
-- code-intelligence tools, through the editor protocol's lsp/* requests
-- and the settle member of diagnostics/get (docs/editor-protocol.md). An
-- agent's questions then reach the servers Neovim already runs, which know
-- the buffers not saved yet, and no second server indexes the project.
--
-- Written against the Neovim 0.7 API, with the newer names where they
-- exist (vim.lsp.get_clients, LspProgress), as init.lua is.
local M = {}

local uv = vim.uv or vim.loop
local api = vim.api

-- The LSP requests gemkit may ask: questions that change nothing. Any
-- other is refused, whoever asks.
local allowed = {
  ['textDocument/definition'] = true,
  ['textDocument/declaration'] = true,
  ['textDocument/typeDefinition'] = true,
  ['textDocument/implementation'] = true,
  ['textDocument/references'] = true,
  ['textDocument/hover'] = true,
  ['textDocument/documentSymbol'] = true,
  ['textDocument/prepareCallHierarchy'] = true,
  ['callHierarchy/incomingCalls'] = true,
  ['callHierarchy/outgoingCalls'] = true,
  ['workspace/symbol'] = true,
}

-- Files opened hidden so that a client attaches: at most max_hidden are
-- kept (the least recently asked about are wiped), unlisted, without a
-- swap file, reloaded from disk when it changes.
local max_hidden = 32
local hidden = {} -- bufnr -> last use (uv.now())

-- What each client last published for each buffer: the document version
-- its diagnostics are for (nil when the server gives none) and when.
local published = {} -- bufnr -> client id -> { version, at }
local watcher -- the publishDiagnostics handler that notes them
-- Work-done progress of each client (Neovim 0.10+): client id -> token -> text.
local progress = {}

local has_011 = vim.fn.has('nvim-0.11') == 1

local function is_file(path)
  local st = path ~= '' and uv.fs_stat(path)
  return st and st.type == 'file' or false
end

local function stopped(c)
  if has_011 then
    return c:is_stopped()
  end
  return c.is_stopped()
end

-- loaded_buffer returns the loaded buffer that is the file path, or nil:
-- init.lua's, given to register.
local loaded_buffer

-- reread reads buf again from disk unless the person changed it (as
-- 'autoread' would), keeping the buffer's own 'autoread': a file an agent
-- wrote since, so that the clients answer from what is on disk.
local function reread(buf)
  if vim.bo[buf].modified then
    return
  end
  api.nvim_buf_call(buf, function()
    local ar = vim.bo[buf].autoread
    vim.bo[buf].autoread = true
    vim.cmd('silent! checktime ' .. buf)
    vim.bo[buf].autoread = ar
  end)
end

-- clients_of lists the clients attached to buf, or every client when buf
-- is nil, that count positions in UTF-16 as the protocol does (a client
-- set to another offset encoding is passed over: gemkit's own server
-- answers instead).
local function clients_of(buf)
  local list = {}
  if vim.lsp.get_clients then
    list = vim.lsp.get_clients(buf and { bufnr = buf } or nil)
  elseif buf then
    for _, c in pairs(vim.lsp.buf_get_clients(buf)) do
      table.insert(list, c)
    end
  else
    list = vim.lsp.get_active_clients()
  end
  local out = {}
  for _, c in ipairs(list) do
    local enc = c.offset_encoding or 'utf-16'
    if enc == 'utf-16' and not stopped(c) then
      table.insert(out, c)
    end
  end
  table.sort(out, function(a, b)
    return a.id < b.id
  end)
  return out
end

local function supports(c, method, buf)
  if has_011 then
    return c:supports_method(method, buf)
  end
  return c.supports_method(method)
end

local function request(c, method, params, handler, buf)
  if has_011 then
    return c:request(method, params, handler, buf)
  end
  return c.request(method, params, handler, buf)
end

local function cancel(c, id)
  if has_011 then
    return c:cancel_request(id)
  end
  return c.cancel_request(id)
end

local function notify_client(c, method, params)
  if has_011 then
    return c:notify(method, params)
  end
  return c.notify(method, params)
end

-- indexing is what a client's server reports it is busy with, or ''.
local function indexing(c)
  local texts = {}
  local function add(p)
    if type(p) == 'table' and not p.done and (p.title or p.message) then
      table.insert(texts, table.concat(vim.tbl_filter(function(s)
        return s and s ~= ''
      end, { p.title, p.message }), ': '))
    end
  end
  if c.messages and c.messages.progress then -- Neovim 0.7 to 0.9
    for _, p in pairs(c.messages.progress) do
      add(p)
    end
  end
  for _, text in pairs(progress[c.id] or {}) do
    table.insert(texts, text)
  end
  table.sort(texts)
  return table.concat(texts, '; ')
end

local function trim_hidden()
  local list = {}
  for buf, used in pairs(hidden) do
    if not api.nvim_buf_is_valid(buf) or vim.bo[buf].buflisted or #vim.fn.win_findbuf(buf) > 0 then
      hidden[buf] = nil -- the person opened it: theirs now
    else
      table.insert(list, { buf = buf, used = used })
    end
  end
  table.sort(list, function(a, b)
    return a.used > b.used
  end)
  for i = max_hidden + 1, #list do
    local buf = list[i].buf
    hidden[buf] = nil
    if not vim.bo[buf].modified then
      pcall(api.nvim_buf_delete, buf, { force = false })
    end
  end
end

-- buffer_for returns the loaded buffer of path, opening the file hidden
-- when it is not loaded (its filetype detected, so that the clients the
-- person set up for it attach as when they open it), or nil when path is
-- not a file; opened is true when it was opened now.
local function buffer_for(path)
  local buf = loaded_buffer(path)
  if buf then
    if hidden[buf] then
      hidden[buf] = uv.now()
    end
    reread(buf)
    return buf, false
  end
  if not is_file(path) then
    return nil, false
  end
  buf = vim.fn.bufadd(path)
  vim.bo[buf].swapfile = false
  vim.bo[buf].buflisted = false
  vim.fn.bufload(buf)
  vim.bo[buf].autoread = true
  if vim.bo[buf].filetype == '' then
    api.nvim_buf_call(buf, function()
      pcall(vim.cmd, 'silent doautocmd <nomodeline> filetypedetect BufRead ' .. vim.fn.fnameescape(path))
    end)
  end
  hidden[buf] = uv.now()
  trim_hidden()
  return buf, true
end

-- starting tells whether a client is still starting: its capabilities
-- and the buffers it serves are not known yet (Neovim attaches buffers
-- once it has). Neovim 0.7 lists only clients that have started, so
-- every client id is looked at there (ids count up from 1).
local function starting()
  if vim.lsp.get_clients then
    for _, c in ipairs(vim.lsp.get_clients()) do
      if not c.initialized and not stopped(c) then
        return true
      end
    end
    return false
  end
  for id = 1, 256 do
    local c = vim.lsp.get_client_by_id(id)
    if c and not c.initialized and not stopped(c) then
      return true
    end
  end
  return false
end

-- with_clients calls fn(buf, clients) with the clients serving path
-- (every client when path is nil), once those starting have started (at
-- most wait_ms, default start_ms), waiting at most attach_ms for one to
-- attach to a file opened hidden just now (some set-ups find a file's
-- project root asynchronously).
local attach_ms, start_ms = 1000, 10000

local function with_clients(path, fn, wait_ms)
  local buf, opened
  if path then
    buf, opened = buffer_for(path)
    if not buf then
      return fn(nil, {})
    end
  end
  local now = uv.now()
  local attach_by, start_by = now + (opened and attach_ms or 0), now + (wait_ms or start_ms)
  local function try()
    if buf and not api.nvim_buf_is_valid(buf) then
      return fn(nil, {})
    end
    local cs = clients_of(buf)
    local t = uv.now()
    if (#cs > 0 or t >= attach_by) and (not starting() or t >= start_by) then
      return fn(buf, clients_of(buf))
    end
    vim.defer_fn(try, 50)
  end
  try()
end

local function names(clients)
  local out = {}
  for _, c in ipairs(clients) do
    table.insert(out, c.name)
  end
  return out
end

local function check_path(p, field, optional)
  if p == nil or p == vim.NIL then
    if optional then
      return nil
    end
    error(field .. ' is required')
  end
  if type(p) ~= 'string' or p:sub(1, 1) ~= '/' then
    error(field .. ' must be an absolute path')
  end
  return p
end

-- watch_publish puts watcher in front of the publishDiagnostics handler,
-- again when the person's configuration has replaced it since.
local function watch_publish()
  local method = 'textDocument/publishDiagnostics'
  local current = vim.lsp.handlers[method]
  if current == watcher or not current then
    return
  end
  watcher = function(err, result, ctx, ...)
    if type(result) == 'table' and type(result.uri) == 'string' and ctx and ctx.client_id then
      local buf = vim.uri_to_bufnr(result.uri)
      published[buf] = published[buf] or {}
      published[buf][ctx.client_id] = { version = result.version, at = uv.now() }
    end
    return current(err, result, ctx, ...)
  end
  vim.lsp.handlers[method] = watcher
end

-- quiet_ms is how long a server that gave no version must have published
-- nothing more before its last diagnostics count: a publish without a
-- version may be one computed before the change (gopls's first, on
-- loading the workspace, arrives so).
local quiet_ms = 300

-- current tells whether every client of buf has published diagnostics
-- for the version of its text the client last sent (its changedtick);
-- for a publish without a version, whether it came after the moment
-- since and then nothing for quiet_ms.
local function current(buf, since)
  if not api.nvim_buf_is_loaded(buf) then
    return true
  end
  local version = (vim.lsp.util.buf_versions or {})[buf] or api.nvim_buf_get_changedtick(buf)
  local now = uv.now()
  for _, c in ipairs(clients_of(buf)) do
    local p = (published[buf] or {})[c.id]
    if not p then
      return false
    end
    if p.version then
      if p.version < version then
        return false
      end
    elseif p.at < since or now - p.at < quiet_ms then
      return false
    end
  end
  return true
end

-- register adds the lsp/* requests (and diagnostics/get's settle) to
-- init.lua's handlers; proto holds its reply, reply_error and buffer_of.
function M.register(handlers, proto)
  local reply, reply_error = proto.reply, proto.reply_error
  loaded_buffer = proto.buffer_of

  -- safe wraps a callback that answers request id later: a failure in
  -- it is answered with -32603 rather than left without an answer.
  local function safe(id, method, fn)
    return function(...)
      local ok, err = pcall(fn, ...)
      if not ok then
        reply_error(id, -32603, method .. ' failed in Neovim: ' .. tostring(err))
      end
    end
  end

  -- guard runs fn, answering a request whose params are wrong with
  -- -32602 and the reason.
  local function guard(method, fn)
    handlers[method] = function(params, id)
      local ok, err = pcall(fn, params, id)
      if not ok then
        reply_error(id, -32602, 'Invalid params for ' .. method .. ': ' .. tostring(err):gsub('^[^:]*:%d+: ', ''))
      end
    end
  end

  guard('lsp/clients', function(params, id)
    local path = check_path(params.path, 'path', true)
    with_clients(path, safe(id, 'lsp/clients', function(_, clients)
      local out = {}
      for _, c in ipairs(clients) do
        local ix = indexing(c)
        table.insert(out, { name = c.name, indexing = ix ~= '' and ix or nil })
      end
      reply(id, { clients = out })
    end))
  end)

  guard('lsp/request', function(params, id)
    local path = check_path(params.path, 'path', true)
    local method = params.method
    if not allowed[method] then
      error('method ' .. tostring(method) .. ' is not one gemkit may ask')
    end
    if type(params.params) ~= 'table' then
      error('params must be an object')
    end
    local timeout = tonumber(params.timeout) or 10000
    local started = uv.now()
    with_clients(path, safe(id, 'lsp/request', function(buf, clients)
      timeout = math.max(timeout - (uv.now() - started), 1)
      if type(params.client) == 'string' then
        clients = vim.tbl_filter(function(c)
          return c.name == params.client
        end, clients)
      end
      local lsp_params = params.params
      if buf and type(lsp_params.textDocument) == 'table' then
        lsp_params.textDocument.uri = vim.uri_from_bufnr(buf)
      end
      local answers, pending, done = {}, {}, false
      local asked = 0
      local timer
      local function finish()
        if done then
          return
        end
        done = true
        if timer and not timer:is_closing() then
          timer:stop()
          timer:close()
        end
        for c, rid in pairs(pending) do
          pcall(cancel, c, rid)
          table.insert(answers, { client = c.name, error = { code = -32803, message = c.name .. ' did not answer within ' .. timeout .. ' ms' } })
        end
        reply(id, { clients = names(clients), answers = answers })
      end
      for _, c in ipairs(clients) do
        if supports(c, method, buf) then
          asked = asked + 1
          local ok, rid = request(c, method, lsp_params, safe(id, 'lsp/request', function(err, result)
            if done then
              return
            end
            pending[c] = nil
            if err then
              table.insert(answers, { client = c.name, error = { code = err.code or -32603, message = err.message or tostring(err) } })
            else
              table.insert(answers, { client = c.name, result = result })
            end
            if next(pending) == nil then
              finish()
            end
          end), buf)
          if ok then
            pending[c] = rid
          else
            table.insert(answers, { client = c.name, error = { code = -32603, message = c.name .. ' has stopped' } })
          end
        end
      end
      if next(pending) == nil then
        return finish()
      end
      timer = vim.defer_fn(safe(id, 'lsp/request', finish), timeout)
    end), math.floor(timeout / 2))
  end)

  guard('lsp/changed', function(params, id)
    if type(params.paths) ~= 'table' then
      error('paths must be a list of absolute paths')
    end
    local notify = {}
    for _, p in ipairs(params.paths) do
      check_path(p, 'paths[]')
      local buf = loaded_buffer(p)
      if buf then
        if is_file(p) then
          reread(buf)
        end
      else
        table.insert(notify, { uri = vim.uri_from_fname(p), type = is_file(p) and 2 or 3 })
      end
    end
    if #notify > 0 then
      for _, c in ipairs(clients_of(nil)) do
        pcall(notify_client, c, 'workspace/didChangeWatchedFiles', { changes = notify })
      end
    end
    reply(id, vim.empty_dict())
  end)

  guard('lsp/unsaved', function(_, id)
    local files = {}
    for _, buf in ipairs(api.nvim_list_bufs()) do
      if api.nvim_buf_is_loaded(buf) and vim.bo[buf].buftype == '' and vim.bo[buf].modified and #clients_of(buf) > 0 then
        local name = api.nvim_buf_get_name(buf)
        local path = name ~= '' and vim.fn.fnamemodify(name, ':p')
        if path and is_file(path) then
          local text = table.concat(api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
          if vim.bo[buf].endofline then
            text = text .. '\n'
          end
          table.insert(files, { path = path, text = text })
        end
      end
    end
    reply(id, { files = files })
  end)

  -- diagnostics/get with settle: the file is opened hidden when it is not
  -- loaded, and the answer waits until every client of each buffer asked
  -- about has published diagnostics for the version of its text it last
  -- sent (flushed now), at most settle ms.
  local answer = handlers['diagnostics/get']
  handlers['diagnostics/get'] = function(params, id)
    local settle = tonumber(params.settle)
    if not settle or settle <= 0 then
      return answer(params, id)
    end
    local ok, err = pcall(function()
      local path = check_path(params.path, 'path', true)
      local deadline = uv.now() + settle
      watch_publish()
      local function wait(bufs)
        local since = uv.now()
        local function try()
          local all = true
          for _, buf in ipairs(bufs) do
            all = all and current(buf, since)
          end
          if all or uv.now() >= deadline then
            return answer(params, id)
          end
          vim.defer_fn(safe(id, 'diagnostics/get', try), 25)
        end
        try()
      end
      if path then
        with_clients(path, safe(id, 'diagnostics/get', function(buf, clients)
          -- A request sends the changes each client holds back
          -- (debounced) first; it is cancelled at once.
          for _, c in ipairs(clients) do
            local called, sent, rid = pcall(request, c, 'textDocument/documentSymbol', { textDocument = { uri = vim.uri_from_bufnr(buf) } }, function() end, buf)
            if called and sent and rid then
              pcall(cancel, c, rid)
            end
          end
          wait(buf and { buf } or {})
        end))
      else
        local bufs = {}
        for _, buf in ipairs(api.nvim_list_bufs()) do
          if api.nvim_buf_is_loaded(buf) and vim.bo[buf].buftype == '' then
            table.insert(bufs, buf)
          end
        end
        wait(bufs)
      end
    end)
    if not ok then
      reply_error(id, -32602, 'Invalid params for diagnostics/get: ' .. tostring(err):gsub('^[^:]*:%d+: ', ''))
    end
  end

  local group = api.nvim_create_augroup('gemkit_lsp', { clear = true })
  -- The watcher goes in front of the handler before any publish can
  -- arrive: when the first language client attaches (the server has not
  -- had the buffer yet), or now when vim.lsp is already loaded. Loading
  -- vim.lsp here would cost Neovim's start 4 to 10 ms before gemkit is
  -- even spawned (--startuptime: require('vim.lsp') and its handlers),
  -- in an editor that may never start a language client. Neovim 0.7 has
  -- no LspAttach: there it is loaded now, as before.
  if package.loaded['vim.lsp'] or vim.fn.exists('##LspAttach') == 0 then
    watch_publish()
  else
    api.nvim_create_autocmd('LspAttach', {
      group = group,
      callback = function()
        watch_publish()
      end,
    })
  end
  api.nvim_create_autocmd({ 'BufWipeout', 'BufUnload' }, {
    group = group,
    callback = function(ev)
      published[ev.buf] = nil
      hidden[ev.buf] = nil
    end,
  })
  if vim.fn.exists('##LspProgress') == 1 then
    api.nvim_create_autocmd('LspProgress', {
      group = group,
      callback = function(ev)
        local d = ev.data or {}
        local p = d.params or {}
        local v = p.value
        if not d.client_id or type(v) ~= 'table' or p.token == nil then
          return
        end
        progress[d.client_id] = progress[d.client_id] or {}
        if v.kind == 'end' then
          progress[d.client_id][p.token] = nil
        elseif v.kind == 'begin' then
          progress[d.client_id][p.token] = table.concat(vim.tbl_filter(function(s)
            return s and s ~= ''
          end, { v.title, v.message }), ': ')
        elseif v.message then
          local cur = progress[d.client_id][p.token]
          if cur then
            progress[d.client_id][p.token] = cur:gsub(': .*', '') .. ': ' .. v.message
          end
        end
      end,
    })
  end
end

return M
