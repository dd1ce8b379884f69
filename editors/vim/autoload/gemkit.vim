" gemkit.vim: makes Vim a Gemini CLI IDE companion through
" `gemkit ide serve --editor stdio` (see docs/editor-protocol.md and
" docs/editors.md). Needs Vim 8.2 or later with +job and +channel (Vim 9
" recommended).
scriptencoding utf-8

let s:job = v:null
let s:stopping = 0
let s:ready = v:null
let s:log = []
let s:tracked = {}   " bufnr -> path reported to gemkit
let s:last = ''      " key of the last focus/selection sent
let s:diffs = {}     " filePath -> diff view
let s:timer = -1

function! s:opt(name, default) abort
  return get(g:, 'gemkit_' . a:name, a:default)
endfunction

function! s:notify(msg, ...) abort
  echohl ErrorMsg
  echomsg 'gemkit: ' . a:msg
  echohl None
endfunction

function! s:add_log(line) abort
  call add(s:log, a:line)
  if len(s:log) > s:opt('log_lines', 500)
    call remove(s:log, 0)
  endif
endfunction

" Protocol output --------------------------------------------------------

function! s:write(msg) abort
  if !s:running() || s:stopping
    return 0
  endif
  call ch_sendraw(job_getchannel(s:job), json_encode(a:msg) . "\n")
  return 1
endfunction

function! s:send(method, params) abort
  return s:write({'jsonrpc': '2.0', 'method': a:method, 'params': a:params})
endfunction

function! s:reply(id, result) abort
  call s:write({'jsonrpc': '2.0', 'id': a:id, 'result': a:result})
endfunction

function! s:reply_error(id, code, message) abort
  call s:write({'jsonrpc': '2.0', 'id': a:id, 'error': {'code': a:code, 'message': a:message}})
endfunction

" Positions and paths -----------------------------------------------------

" s:utf16_len counts UTF-16 code units, the unit the official VS Code
" companion reports characters in.
function! s:utf16_len(s) abort
  return strchars(a:s) + len(filter(str2list(a:s), 'v:val > 0xFFFF'))
endfunction

" s:file_path is the absolute path of a buffer that shows a file on disk,
" or '' for scratch, help, terminal and unsaved buffers.
function! s:file_path(buf) abort
  if !bufexists(a:buf) || getbufvar(a:buf, '&buftype') !=# ''
    return ''
  endif
  let name = bufname(a:buf)
  if name ==# '' || name =~# '^\a[[:alnum:]+.-]*://'
    return ''
  endif
  let name = fnamemodify(name, ':p')
  return filereadable(name) && !isdirectory(name) ? name : ''
endfunction

function! s:char_at(line, col) abort
  return matchstr(a:line, '\%' . a:col . 'c.')
endfunction

" s:region_text is the current buffer's text between positions s and e
" (getpos() lists, either order) selected in Visual mode m ('v', 'V' or
" CTRL-V).
function! s:region_text(m, s, e) abort
  let [sl, sc] = a:s[1:2]
  let [el, ec] = a:e[1:2]
  if sl < 1 || el < 1
    return ''
  endif
  let m = a:m
  if sl > el || (sl == el && sc > ec)
    let [sl, sc, el, ec] = [el, ec, sl, sc]
  endif
  " gemkit cuts a selection at 16384 characters: more lines than that
  " (each at least one character with its newline) are never needed.
  let capped = el - sl > 16384
  if capped
    let el = sl + 16384
  endif
  let lines = getline(sl, el)
  if empty(lines)
    return ''
  endif
  if m ==# 'V'
    return join(lines, "\n")
  endif
  if m ==# 'v'
    let last = lines[-1]
    if !capped
      let lines[-1] = strpart(last, 0, ec - 1 + len(s:char_at(last, ec)))
    endif
    let lines[0] = strpart(lines[0], sc - 1)
    return join(lines, "\n")
  endif
  let [lo, hi] = [min([sc, ec]), max([sc, ec])]
  return join(map(lines, 'strpart(v:val, lo - 1, hi - lo + len(s:char_at(v:val, hi)))'), "\n")
endfunction

" s:selected_text is the visual selection's text, or '' outside visual mode.
function! s:selected_text() abort
  let m = mode()
  if m !=# 'v' && m !=# 'V' && m !=# "\<C-v>"
    return ''
  endif
  return s:region_text(m, getpos('v'), getpos('.'))
endfunction

function! s:cursor() abort
  let prefix = strpart(getline('.'), 0, col('.') - 1)
  return {'line': line('.'), 'character': s:utf16_len(prefix) + 1}
endfunction

" Editor events -------------------------------------------------------------

function! gemkit#report(method) abort
  if s:ready is v:null
    return
  endif
  let buf = bufnr('%')
  let path = s:file_path(buf)
  if path ==# ''
    return
  endif
  call s:report(a:method, buf, path, s:cursor(), s:selected_text())
endfunction

" s:report sends buf's file path with cursor and the selected text sel.
function! s:report(method, buf, path, cursor, sel) abort
  let [buf, path, sel] = [a:buf, a:path, a:sel]
  let params = {'path': path, 'cursor': a:cursor}
  if sel !=# ''
    let params.selectedText = sel
  endif
  let key = join([path, params.cursor.line, params.cursor.character, sel], "\x01")
  if key ==# s:last && (a:method ==# 'editor/selection' || get(s:tracked, buf, '') ==# path)
    return
  endif
  let s:last = key
  let s:tracked[buf] = path
  call s:send(a:method, params)
endfunction

" gemkit#on_mode_changed reports the selection when the mode changes. A
" window command typed in Visual mode (<C-w>l into the terminal where the
" agent runs, a mouse click) ends Visual mode while the file's window is
" still current, and only then moves: deciding once the command is done
" keeps the selection when focus went to a window without a file, as VS
" Code keeps an editor's selection while its terminal has focus; Esc in the
" file still drops it. The selection is the one Visual mode ended with
" (the '< and '> marks): keys typed ahead move the cursor without
" CursorMoved.
function! gemkit#on_mode_changed() abort
  let visual = "^[vV\<C-v>]"
  if v:event.old_mode !~# visual || v:event.new_mode =~# visual || s:ready is v:null
    call gemkit#report('editor/selection')
    return
  endif
  let buf = bufnr('%')
  let path = s:file_path(buf)
  let left = path ==# '' ? {} : {'buf': buf, 'path': path, 'cursor': s:cursor(),
        \ 'sel': s:region_text(visualmode()[0], getpos("'<"), getpos("'>"))}
  call timer_start(0, {-> s:after_visual(left)})
endfunction

" s:after_visual runs once the keys that ended Visual mode are done: with
" focus on a window without a file it reports the selection left, else
" what the current window shows.
function! s:after_visual(left) abort
  if !empty(a:left) && s:file_path(bufnr('%')) ==# '' && s:ready isnot v:null && bufexists(a:left.buf)
    call s:report('editor/selection', a:left.buf, a:left.path, a:left.cursor, a:left.sel)
  else
    call gemkit#report('editor/selection')
  endif
endfunction

function! s:forget(buf, method) abort
  if !has_key(s:tracked, a:buf)
    return
  endif
  let path = remove(s:tracked, a:buf)
  let s:last = ''
  if index(values(s:tracked), path) >= 0
    return
  endif
  call s:send(a:method, {'path': path})
endfunction

function! gemkit#check_deleted(...) abort
  for [buf, path] in items(s:tracked)
    if !filereadable(path)
      call s:forget(str2nr(buf), 'editor/delete')
    endif
  endfor
endfunction

function! gemkit#on_enter() abort
  if s:ready is v:null
    return
  endif
  call gemkit#check_deleted()
  call gemkit#report('editor/focus')
endfunction

function! gemkit#on_write(buf) abort
  if s:ready isnot v:null && a:buf == bufnr('%') && !has_key(s:tracked, a:buf)
    call gemkit#report('editor/focus')
  endif
endfunction

function! gemkit#on_buf_gone(buf) abort
  if s:ready isnot v:null && has_key(s:tracked, a:buf)
    call s:forget(a:buf, filereadable(s:tracked[a:buf]) ? 'editor/close' : 'editor/delete')
  endif
endfunction

function! gemkit#on_rename(buf) abort
  if s:ready is v:null || !has_key(s:tracked, a:buf)
    return
  endif
  let old = s:tracked[a:buf]
  let new = fnamemodify(bufname(a:buf), ':p')
  if new !=# old
    let s:tracked[a:buf] = new
    let s:last = ''
    call s:send('editor/rename', {'oldPath': old, 'newPath': new})
  endif
endfunction

function! gemkit#on_cd() abort
  if s:ready isnot v:null && s:opt('follow_cwd', 1) && !exists('g:gemkit_workspace')
    call s:send('workspace/update', {'paths': [getcwd(-1)]})
    " Terminals opened from now on name the new workspace too (Qwen
    " Code's variable when gemkit gave it).
    call setenv('GEMINI_CLI_IDE_WORKSPACE_PATH', getcwd(-1))
    if has_key(get(s:ready, 'env', {}), 'QWEN_CODE_IDE_WORKSPACE_PATH')
      call setenv('QWEN_CODE_IDE_WORKSPACE_PATH', getcwd(-1))
    endif
  endif
endfunction

function! s:reload(buf) abort
  if !bufloaded(a:buf) || getbufvar(a:buf, '&modified')
    return
  endif
  let autoread = getbufvar(a:buf, '&autoread')
  call setbufvar(a:buf, '&autoread', 1)
  execute 'silent! checktime' a:buf
  call setbufvar(a:buf, '&autoread', autoread)
endfunction

function! s:buffer_of(path) abort
  for info in getbufinfo({'bufloaded': 1})
    if info.name !=# '' && getbufvar(info.bufnr, '&buftype') ==# '' && fnamemodify(info.name, ':p') ==# a:path
      return info.bufnr
    endif
  endfor
  return -1
endfunction

" Diff views ----------------------------------------------------------------

" s:set_text fills the current buffer with text, remembering in 'endofline'
" whether it ended with a newline so that s:buffer_text gives it back.
function! s:set_text(text) abort
  let eol = a:text[-1:] ==# "\n"
  let lines = split(eol ? a:text[:-2] : a:text, "\n", 1)
  silent %delete _
  call setline(1, lines)
  setlocal nofixendofline
  let &l:endofline = eol
endfunction

function! s:buffer_text(buf) abort
  let text = join(getbufline(a:buf, 1, '$'), "\n")
  return getbufvar(a:buf, '&endofline') ? text . "\n" : text
endfunction

function! s:scratch(name) abort
  setlocal buftype=nofile bufhidden=wipe noswapfile
  try
    execute 'silent file' fnameescape(a:name)
  catch
    execute 'silent file' fnameescape(a:name . ' ' . bufnr('%'))
  endtry
endfunction

function! s:filetype(path) abort
  let buf = s:buffer_of(a:path)
  if buf > 0 && getbufvar(buf, '&filetype') !=# ''
    return getbufvar(buf, '&filetype')
  endif
  silent! execute 'doautocmd filetypedetect BufRead' fnameescape(a:path)
  return &filetype
endfunction

function! s:tab_of(d) abort
  for n in range(1, tabpagenr('$'))
    if gettabvar(n, 'gemkit_diff_id', -1) == a:d.id
      return n
    endif
  endfor
  return 0
endfunction

" s:close_view removes a diff's tab and buffers; the diff is marked done
" first so that the wipe does not report a rejection.
function! s:close_view(d) abort
  let a:d.done = 1
  if get(s:diffs, a:d.path, {}) is a:d
    call remove(s:diffs, a:d.path)
  endif
  let tab = s:tab_of(a:d)
  if tab > 0 && tabpagenr('$') > 1
    execute 'silent! tabclose!' tab
  endif
  for b in [a:d.left, a:d.right]
    if bufexists(b)
      execute 'silent! bwipeout!' b
    endif
  endfor
endfunction

" s:resolve answers diff d; with a third argument true, its view closes
" once the command that answered is done (:wq still has a window to quit).
function! s:resolve(d, accepted, ...) abort
  if a:d.done
    return
  endif
  let content = a:accepted ? s:buffer_text(a:d.right) : ''
  if get(a:, 1, 0)
    let a:d.done = 1
    if get(s:diffs, a:d.path, {}) is a:d
      call remove(s:diffs, a:d.path)
    endif
    let d = a:d
    call timer_start(0, {-> s:close_view(d)})
  else
    call s:close_view(a:d)
  endif
  if a:accepted
    call s:send('diff/accepted', {'filePath': a:d.path, 'content': content})
    " Gemini CLI writes the file itself; show the new text once it has.
    call timer_start(1000, {-> s:reload(s:buffer_of(a:d.path))})
  else
    call s:send('diff/rejected', {'filePath': a:d.path})
  endif
endfunction

" s:on_write accepts the proposal written with :w (:wq, :x): nothing is
" written here, the agent writes the file.
function! s:on_write(path, id) abort
  let d = get(s:diffs, a:path, {})
  setlocal nomodified
  if !empty(d) && d.id == a:id
    call s:resolve(d, 1, 1)
  endif
endfunction

function! s:on_wipe(path, id) abort
  let d = get(s:diffs, a:path, {})
  if !empty(d) && d.id == a:id && !d.done
    call timer_start(0, {-> s:resolve(d, 0)})
  endif
endfunction

let s:next_id = 0

" s:proposer is the status line's start for a proposal of agent (the
" diff/open's agent, absent from an older gemkit or an unknown client).
function! s:proposer(agent) abort
  if type(a:agent) == v:t_string && a:agent !=# ''
    return 'Proposed by ' . substitute(a:agent, '%', '%%', 'g') . ': '
  endif
  return 'Proposed: '
endfunction

function! s:open_diff(path, content, agent) abort
  if has_key(s:diffs, a:path)
    call s:close_view(s:diffs[a:path])   " a new proposal replaces the old view
  endif
  let on_disk = filereadable(a:path) && !isdirectory(a:path)
  let s:next_id += 1
  let d = {'path': a:path, 'id': s:next_id, 'done': 0}
  tabnew
  let t:gemkit_diff_id = d.id
  let d.left = bufnr('%')
  call s:scratch('gemkit://' . a:path . (on_disk ? ' [on disk]' : ' [new file]'))
  let ft = s:filetype(a:path)
  call s:set_text(on_disk ? join(readfile(a:path, 'b'), "\n") : '')
  setlocal nomodifiable readonly
  let b:gemkit_diff = a:path
  diffthis
  rightbelow vertical new
  let d.right = bufnr('%')
  call s:scratch('gemkit://' . a:path . ' [proposed]')
  call s:set_text(a:content)
  let &l:filetype = ft
  call setbufvar(d.left, '&filetype', ft)
  setlocal nomodified
  let b:gemkit_diff = a:path
  diffthis
  " Closing the proposal in any way (:q, :tabclose, :bwipeout) rejects it;
  " :w accepts it, as in claudecode.nvim; its status line says so.
  execute 'autocmd gemkit BufWipeout <buffer=' . d.right . '> call s:on_wipe(' . string(a:path) . ', ' . d.id . ')'
  setlocal buftype=acwrite
  execute 'autocmd gemkit BufWriteCmd <buffer=' . d.right . '> call s:on_write(' . string(a:path) . ', ' . d.id . ')'
  let &l:statusline = s:proposer(a:agent) . substitute(fnamemodify(a:path, ':~:.'), '%', '%%', 'g')
        \ . '%=:w accepts (with your edits), :q rejects '
  let s:diffs[a:path] = d
  redraw
endfunction

" s:current_diff is the diff a command applies to: the one in the current
" buffer, else the only open one.
function! s:current_diff() abort
  let path = get(b:, 'gemkit_diff', '')
  if has_key(s:diffs, path)
    return s:diffs[path]
  endif
  if len(s:diffs) == 1
    return values(s:diffs)[0]
  endif
  call s:notify(empty(s:diffs) ? 'no diff is open' : 'several diffs are open: run the command in the diff you mean')
  return {}
endfunction

function! gemkit#accept() abort
  let d = s:current_diff()
  if !empty(d)
    call s:resolve(d, 1)
  endif
endfunction

function! gemkit#reject() abort
  let d = s:current_diff()
  if !empty(d)
    call s:resolve(d, 0)
  endif
endfunction

" Protocol input ---------------------------------------------------------------

function! s:set_env(env, on) abort
  for [k, v] in items(a:env)
    call setenv(k, a:on ? v : v:null)
  endfor
endfunction

function! s:handle(msg) abort
  let id = get(a:msg, 'id', v:null)
  let params = get(a:msg, 'params', {})
  if type(params) != v:t_dict
    let params = {}
  endif
  let method = a:msg.method
  if method ==# 'server/ready'
    let s:ready = params
    call s:set_env(get(params, 'env', {}), 1)
    let s:last = ''
    call gemkit#report('editor/focus')
    if exists('#User#GemkitReady')
      doautocmd <nomodeline> User GemkitReady
    endif
  elseif method ==# 'file/written'
    let buf = s:buffer_of(get(params, 'path', ''))
    if buf > 0
      call s:reload(buf)
    endif
  elseif method ==# 'diff/open'
    if type(get(params, 'filePath')) != v:t_string || type(get(params, 'newContent')) != v:t_string
      return s:reply_error(id, -32602, 'diff/open needs filePath and newContent strings')
    endif
    call s:when_free(function('s:answer_open', [id, params.filePath, params.newContent, get(params, 'agent', '')]), 0)
  elseif method ==# 'diff/close'
    let d = get(s:diffs, get(params, 'filePath', ''), {})
    if empty(d)
      return s:reply(id, {'content': v:null})
    endif
    let content = s:buffer_text(d.right)
    " No outcome for this view, even if closing it has to wait.
    let d.done = 1
    call remove(s:diffs, d.path)
    call s:reply(id, {'content': content})
    call s:when_free(function('s:close_view', [d]), 0)
  elseif method ==# 'diagnostics/get'
    call s:reply(id, {'files': s:diagnostics(get(params, 'path', ''))})
  elseif method =~# '^lsp/\(clients\|request\|changed\|unsaved\)$' && id isnot v:null
    " ALE's language servers, lent to gemkit's code-intelligence tools:
    " autoload/gemkit/lsp.vim.
    call gemkit#lsp#handle(id, method, params, function('s:reply'), function('s:reply_error'))
  elseif id isnot v:null
    call s:reply_error(id, -32601, 'Method not found: ' . method)
  endif
endfunction

" Diagnostics ---------------------------------------------------------------

let s:severity = {'E': 'error', 'W': 'warning', 'I': 'info', 'N': 'hint', 'S': 'hint'}

" s:diagnostic turns a quickfix or ALE loclist item into the protocol's
" form (1-based lines and characters).
function! s:diagnostic(item, source) abort
  let line = max([get(a:item, 'lnum', 1), 1])
  let col = max([get(a:item, 'col', 1), 1])
  let d = {'message': get(a:item, 'text', ''),
        \ 'severity': get(s:severity, toupper(get(a:item, 'type', 'E')), 'error'),
        \ 'range': {'start': {'line': line, 'character': col},
        \           'end': {'line': max([get(a:item, 'end_lnum', line), line]), 'character': max([get(a:item, 'end_col', col), col])}}}
  let src = get(a:item, 'linter_name', a:source)
  if !empty(src)
    let d.source = src
  endif
  if has_key(a:item, 'code') && !empty(a:item.code)
    let d.code = type(a:item.code) == v:t_string ? a:item.code : string(a:item.code)
  endif
  return d
endfunction

" s:diagnostics answers diagnostics/get: ALE's problems when ALE is
" loaded, else the quickfix list's, for path or for every file.
function! s:diagnostics(path) abort
  let by = {}
  if exists('g:ale_buffer_info')
    for [buf, info] in items(g:ale_buffer_info)
      let p = s:file_path(str2nr(buf))
      if !empty(p)
        let by[p] = map(copy(get(info, 'loclist', [])), 's:diagnostic(v:val, "ale")')
      endif
    endfor
  else
    for item in getqflist()
      let p = s:file_path(get(item, 'bufnr', 0))
      if !empty(p) && get(item, 'valid', 1)
        if !has_key(by, p)
          let by[p] = []
        endif
        call add(by[p], s:diagnostic(item, 'quickfix'))
      endif
    endfor
  endif
  if !empty(a:path)
    return [{'path': a:path, 'diagnostics': get(by, a:path, [])}]
  endif
  return map(items(by), '{"path": v:val[0], "diagnostics": v:val[1]}')
endfunction

" gemkit#mention @-mentions the current file in Claude Code's prompt,
" with lines line1..line2 when given (:GemkitMention with a range).
function! gemkit#mention(...) abort
  let path = s:file_path(bufnr('%'))
  if empty(path)
    echohl WarningMsg | echomsg 'gemkit: this buffer is not a file on disk' | echohl None
    return
  endif
  let params = {'path': path}
  if a:0 >= 2
    let params.lineStart = min([a:1, a:2])
    let params.lineEnd = max([a:1, a:2])
  endif
  if !s:send('editor/mention', params)
    echohl WarningMsg | echomsg 'gemkit is not running: :GemkitStart' | echohl None
  endif
endfunction

" s:when_free calls Fn once no command line or pending operator holds the
" screen (windows cannot change then), trying for up to 25 s so that
" gemkit still gets its answer within its 30 s.
function! s:when_free(Fn, tries) abort
  let m = mode(1)
  if (m =~# '^[cr]' || m =~# '^no') && a:tries < 250
    call timer_start(100, {-> s:when_free(a:Fn, a:tries + 1)})
    return
  endif
  call a:Fn()
endfunction

function! s:answer_open(id, path, content, agent) abort
  try
    call s:open_diff(a:path, a:content, a:agent)
  catch
    return s:reply_error(a:id, -32000, 'cannot show the diff in Vim: ' . v:exception)
  endtry
  call s:reply(a:id, {})
endfunction

function! s:on_stdout(ch, line) abort
  if a:line ==# ''
    return
  endif
  try
    let msg = json_decode(a:line)
  catch
    call s:add_log('unreadable line from gemkit: ' . a:line[:200])
    return
  endtry
  if type(msg) != v:t_dict
    return
  endif
  if type(get(msg, 'method')) != v:t_string
    if type(get(msg, 'error')) == v:t_dict
      call s:add_log('gemkit answered an error: ' . get(msg.error, 'message', ''))
    endif
    return
  endif
  try
    call s:handle(msg)
  catch
    call s:add_log('handling ' . msg.method . ': ' . v:exception)
    if get(msg, 'id', v:null) isnot v:null
      call s:reply_error(msg.id, -32603, v:exception)
    endif
  endtry
endfunction

function! s:on_stderr(ch, line) abort
  call s:add_log(a:line)
endfunction

function! s:on_exit(job, status) abort
  let expected = s:stopping
  if s:ready isnot v:null
    call s:set_env(get(s:ready, 'env', {}), 0)
  endif
  let s:job = v:null
  let s:ready = v:null
  let s:stopping = 0
  if !expected
    call s:notify(printf('gemkit stopped (exit %d): %s', a:status, join(s:log[-3:], ' | ')))
  endif
  if exists('#User#GemkitStopped')
    doautocmd <nomodeline> User GemkitStopped
  endif
endfunction

" Start and stop ----------------------------------------------------------------

function! s:running() abort
  return s:job isnot v:null && job_status(s:job) ==# 'run'
endfunction

function! gemkit#start() abort
  if s:running()
    return 1
  endif
  if !has('job') || !has('channel')
    call s:notify('needs Vim with +job and +channel')
    return 0
  endif
  let cmd = [s:opt('cmd', 'gemkit'), 'ide', 'serve', '--editor', 'stdio',
        \ '--ide-name', s:opt('ide_name', 'vim'), '--ide-display-name', s:opt('ide_display_name', 'Vim'),
        \ '--ide-pid', string(getpid())]
  for dir in s:opt('workspace', [getcwd(-1)])
    let dir = fnamemodify(dir, ':p')
    call extend(cmd, ['--workspace', len(dir) > 1 ? substitute(dir, '/$', '', '') : dir])
  endfor
  call extend(cmd, s:opt('args', []))
  if !executable(cmd[0])
    call s:notify(printf("cannot run '%s': set g:gemkit_cmd to the gemkit binary", cmd[0]))
    return 0
  endif
  let s:tracked = {}
  let s:last = ''
  let s:stopping = 0
  let s:job = job_start(cmd, {
        \ 'in_io': 'pipe', 'in_mode': 'raw',
        \ 'out_io': 'pipe', 'out_mode': 'nl', 'out_cb': function('s:on_stdout'),
        \ 'err_io': 'pipe', 'err_mode': 'nl', 'err_cb': function('s:on_stderr'),
        \ 'exit_cb': function('s:on_exit'), 'stoponexit': 'term', 'noblock': 1})
  if job_status(s:job) !=# 'run'
    let s:job = v:null
    call s:notify('cannot start gemkit')
    return 0
  endif
  let poll = s:opt('poll_ms', 1000)
  if poll > 0 && s:timer < 0
    let s:timer = timer_start(poll, function('gemkit#check_deleted'), {'repeat': -1})
  endif
  return 1
endfunction

" gemkit#stop closes gemkit's stdin, which makes it remove its discovery
" file and exit, and waits up to timeout ms for that (then stops it).
function! gemkit#stop(...) abort
  let timeout = a:0 ? a:1 : 2000
  if s:timer >= 0
    call timer_stop(s:timer)
    let s:timer = -1
  endif
  if s:job is v:null
    return
  endif
  " Open views stay as inert scratch buffers: a new gemkit would not know
  " their diffs.
  for d in values(s:diffs)
    let d.done = 1
  endfor
  let s:diffs = {}
  let job = s:job
  let s:stopping = 1
  call ch_close_in(job_getchannel(job))
  let waited = 0
  while job_status(job) ==# 'run' && waited < timeout
    sleep 10m
    let waited += 10
  endwhile
  if job_status(job) ==# 'run'
    call job_stop(job, 'term')
  endif
endfunction

function! gemkit#status() abort
  if !s:running()
    return 'gemkit is not running'
  endif
  if s:ready is v:null
    return 'gemkit is starting'
  endif
  " Every endpoint the companion serves (server/ready's endpoints; an
  " older gemkit names Gemini CLI's only).
  let endpoints = get(s:ready, 'endpoints', [])
  if type(endpoints) != v:t_list || empty(endpoints)
    let endpoints = [{'agent': 'Gemini CLI', 'port': s:ready.port, 'file': s:ready.discoveryFile}]
  endif
  let lines = []
  for e in endpoints
    call add(lines, printf('gemkit serves %s on 127.0.0.1:%s (%s %s)', e.agent, e.port,
          \ e.agent ==# 'Gemini CLI' ? 'discovery file' : 'lock file', e.file))
  endfor
  return printf("%s\npid %d; open diffs: %s", join(lines, "\n"), job_info(s:job).process,
        \ empty(s:diffs) ? 'none' : join(keys(s:diffs), ', '))
endfunction

" gemkit#state is for tests and statuslines: what the plugin knows.
function! gemkit#state() abort
  let diffs = {}
  for [p, d] in items(s:diffs)
    let diffs[p] = {'left': d.left, 'right': d.right, 'tab': s:tab_of(d)}
  endfor
  return {'running': s:running(), 'ready': s:ready, 'diffs': diffs}
endfunction

function! gemkit#show_log() abort
  new
  setlocal buftype=nofile bufhidden=wipe noswapfile
  call setline(1, s:log)
endfunction
