" gemkit#lsp: lends ALE's language servers to gemkit's code-intelligence
" tools, through the editor protocol's lsp/* requests
" (docs/editor-protocol.md): an agent's questions reach the servers ALE
" already runs, which know the buffers not saved yet. Without ALE there
" are no clients, and gemkit's own servers answer.

" The LSP requests gemkit may ask (questions that change nothing), and the
" capability ALE keeps for each ('' where it keeps none: the server says).
let s:methods = {
      \ 'textDocument/definition': 'definition',
      \ 'textDocument/declaration': '',
      \ 'textDocument/typeDefinition': 'typeDefinition',
      \ 'textDocument/implementation': 'implementation',
      \ 'textDocument/references': 'references',
      \ 'textDocument/hover': 'hover',
      \ 'textDocument/documentSymbol': '',
      \ 'textDocument/prepareCallHierarchy': '',
      \ 'callHierarchy/incomingCalls': '',
      \ 'callHierarchy/outgoingCalls': '',
      \ 'workspace/symbol': 'symbol_search',
      \ }

" Files opened for gemkit alone: at most s:max_hidden are kept.
let s:max_hidden = 32
let s:hidden = {}     " bufnr -> when last asked about (reltime float)
let s:waiting = {}    " connection id . ':' . request id -> callback
let s:listening = {}  " connection ids whose answers are read here

function! s:loaded_buffer(path) abort
  for info in getbufinfo({'bufloaded': 1})
    if info.name !=# '' && getbufvar(info.bufnr, '&buftype') ==# '' && fnamemodify(info.name, ':p') ==# a:path
      return info.bufnr
    endif
  endfor
  return 0
endfunction

function! s:trim_hidden() abort
  let list = []
  for [buf, used] in items(s:hidden)
    let b = str2nr(buf)
    if !bufexists(b) || getbufvar(b, '&buflisted') || !empty(win_findbuf(b))
      call remove(s:hidden, buf) " the person opened it: theirs now
    else
      call add(list, [b, used])
    endif
  endfor
  call sort(list, {a, b -> a[1] < b[1] ? 1 : -1})
  for [b, _] in list[s:max_hidden :]
    call remove(s:hidden, b)
    if !getbufvar(b, '&modified')
      execute 'silent! bwipeout' b
    endif
  endfor
endfunction

" s:buffer_for is the loaded buffer of path, loading the file hidden
" (unlisted, without a swap file; its filetype detected, so that ALE's
" linters for it apply) when it is not loaded; 0 when it is not a file.
function! s:buffer_for(path) abort
  let buf = s:loaded_buffer(a:path)
  if buf > 0
    if has_key(s:hidden, buf)
      let s:hidden[buf] = reltimefloat(reltime())
    endif
    " A file an agent wrote since is read again first, unless the person
    " changed the buffer.
    if !getbufvar(buf, '&modified')
      let ar = getbufvar(buf, '&autoread')
      call setbufvar(buf, '&autoread', 1)
      execute 'silent! checktime' buf
      call setbufvar(buf, '&autoread', ar)
    endif
    return buf
  endif
  if !filereadable(a:path) || isdirectory(a:path)
    return 0
  endif
  let buf = bufadd(a:path)
  call setbufvar(buf, '&swapfile', 0)
  call bufload(buf)
  call setbufvar(buf, '&buflisted', 0)
  call setbufvar(buf, '&autoread', 1)
  let s:hidden[buf] = reltimefloat(reltime())
  call s:trim_hidden()
  return buf
endfunction

" s:linters are ALE's language-server linters for buf.
function! s:linters(buf) abort
  if !exists('g:loaded_ale') || a:buf <= 0
    return []
  endif
  let ft = getbufvar(a:buf, '&filetype')
  if ft ==# ''
    return []
  endif
  return filter(ale#linter#Get(ft), {_, l -> get(l, 'lsp', '') !=# '' && l.lsp isnot# 'tsserver'})
endfunction

" s:targets are [buffer, linter] pairs to ask: path's, or for a question
" about the workspace one buffer for each linter of the loaded buffers.
function! s:targets(path) abort
  if a:path !=# ''
    let buf = s:buffer_for(a:path)
    return map(s:linters(buf), {_, l -> [buf, l]})
  endif
  let out = []
  let seen = {}
  for info in getbufinfo({'bufloaded': 1})
    for l in s:linters(info.bufnr)
      if !has_key(seen, l.name)
        let seen[l.name] = 1
        call add(out, [info.bufnr, l])
      endif
    endfor
  endfor
  return out
endfunction

function! s:on_message(conn_id, response) abort
  let key = a:conn_id . ':' . get(a:response, 'id', '')
  if has_key(a:response, 'id') && has_key(s:waiting, key)
    call remove(s:waiting, key)(a:response)
  endif
endfunction

" s:ask sends method with params to linter's server about buf, starting
" it when ALE has not; Done gets the answer (client and result or error).
function! s:ask(buf, linter, method, params, Done) abort
  let name = a:linter.name
  let Ready = {linter, details -> s:send(details, name, a:buf, a:method, a:params, a:Done)}
  if !ale#lsp_linter#StartLSP(a:buf, a:linter, Ready)
    call a:Done({'client': name, 'error': {'code': -32603, 'message': name . ' could not start (no project root, or its program is missing)'}})
  endif
endfunction

function! s:send(details, name, buf, method, params, Done) abort
  let conn = a:details.connection_id
  let cap = s:methods[a:method]
  try
    if cap !=# '' && !ale#lsp#HasCapability(conn, cap)
      return a:Done({'client': a:name, 'error': {'code': -32601, 'message': a:name . ' does not offer ' . a:method}})
    endif
  catch
  endtry
  " Send the buffer's changes ALE has not sent yet first; for a question
  " about the workspace, every modified buffer's this server serves.
  call ale#lsp#NotifyForChanges(conn, a:buf)
  if a:method ==# 'workspace/symbol'
    for info in getbufinfo({'bufloaded': 1, 'bufmodified': 1})
      for l in s:linters(info.bufnr)
        if l.name ==# a:name
          call ale#lsp#OpenDocument(conn, info.bufnr, ale#linter#GetLanguage(info.bufnr, l))
          call ale#lsp#NotifyForChanges(conn, info.bufnr)
        endif
      endfor
    endfor
  endif
  if !has_key(s:listening, conn)
    let s:listening[conn] = 1
    call ale#lsp#RegisterCallback(conn, function('s:on_message'))
  endif
  let rid = ale#lsp#Send(conn, [0, a:method, a:params])
  if rid <= 0
    return a:Done({'client': a:name, 'error': {'code': -32603, 'message': a:name . ' has stopped'}})
  endif
  let s:waiting[conn . ':' . rid] = {r -> a:Done(has_key(r, 'error')
        \ ? {'client': a:name, 'error': {'code': get(r.error, 'code', -32603), 'message': get(r.error, 'message', '')}}
        \ : {'client': a:name, 'result': get(r, 'result', v:null)})}
endfunction

function! s:check_path(p, field, optional) abort
  if a:optional && (type(a:p) == v:t_none || (type(a:p) == v:t_string && a:p ==# ''))
    return ''
  endif
  if type(a:p) != v:t_string || a:p !~# '^/'
    throw a:field . ' must be an absolute path'
  endif
  return a:p
endfunction

" gemkit#lsp#handle answers gemkit's request id for method, one of the
" lsp/* requests, with Reply and ReplyError.
function! gemkit#lsp#handle(id, method, params, Reply, ReplyError) abort
  try
    if a:method ==# 'lsp/clients'
      let path = s:check_path(get(a:params, 'path', v:none), 'path', 1)
      let names = map(s:targets(path), {_, t -> {'name': t[1].name}})
      return a:Reply(a:id, {'clients': names})
    elseif a:method ==# 'lsp/request'
      return s:request(a:id, a:params, a:Reply)
    elseif a:method ==# 'lsp/changed'
      for p in get(a:params, 'paths', [])
        let buf = s:loaded_buffer(s:check_path(p, 'paths[]', 0))
        if buf > 0 && !getbufvar(buf, '&modified') && filereadable(p)
          let ar = getbufvar(buf, '&autoread')
          call setbufvar(buf, '&autoread', 1)
          execute 'silent! checktime' buf
          call setbufvar(buf, '&autoread', ar)
        endif
      endfor
      return a:Reply(a:id, {})
    elseif a:method ==# 'lsp/unsaved'
      let files = []
      for info in getbufinfo({'bufloaded': 1, 'bufmodified': 1})
        let p = info.name ==# '' ? '' : fnamemodify(info.name, ':p')
        if p !=# '' && filereadable(p) && !empty(s:linters(info.bufnr))
          let text = join(getbufline(info.bufnr, 1, '$'), "\n") . (getbufvar(info.bufnr, '&endofline') ? "\n" : '')
          call add(files, {'path': p, 'text': text})
        endif
      endfor
      return a:Reply(a:id, {'files': files})
    endif
  catch
    return a:ReplyError(a:id, -32602, 'Invalid params for ' . a:method . ': ' . substitute(v:exception, '^Vim[^:]*:', '', ''))
  endtry
endfunction

function! s:request(id, params, Reply) abort
  let path = s:check_path(get(a:params, 'path', v:none), 'path', 1)
  let method = get(a:params, 'method', '')
  if !has_key(s:methods, method)
    throw 'method ' . method . ' is not one gemkit may ask'
  endif
  let lsp_params = get(a:params, 'params', {})
  if type(lsp_params) != v:t_dict
    throw 'params must be an object'
  endif
  let timeout = get(a:params, 'timeout', 10000)
  let targets = s:targets(path)
  if type(get(a:params, 'client', v:none)) == v:t_string
    call filter(targets, {_, t -> t[1].name ==# a:params.client})
  endif
  let state = {'left': len(targets), 'answers': [], 'done': 0,
        \ 'clients': map(copy(targets), {_, t -> t[1].name})}
  if empty(targets)
    return a:Reply(a:id, {'clients': [], 'answers': []})
  endif
  function! state.finish(answer) abort closure
    if self.done
      return
    endif
    call add(self.answers, a:answer)
    let self.left -= 1
    if self.left == 0
      let self.done = 1
      call timer_stop(self.timer)
      call a:Reply(a:id, {'clients': self.clients, 'answers': self.answers})
    endif
  endfunction
  function! state.expire(...) abort closure
    if self.done
      return
    endif
    let self.done = 1
    let answered = map(copy(self.answers), {_, a -> a.client})
    for name in self.clients
      if index(answered, name) < 0
        call add(self.answers, {'client': name, 'error': {'code': -32803, 'message': name . ' did not answer within ' . timeout . ' ms'}})
      endif
    endfor
    call a:Reply(a:id, {'clients': self.clients, 'answers': self.answers})
  endfunction
  let state.timer = timer_start(timeout, state.expire)
  for [buf, linter] in targets
    let p = deepcopy(lsp_params)
    if has_key(p, 'textDocument') && type(p.textDocument) == v:t_dict
      let p.textDocument.uri = ale#util#ToURI(fnamemodify(bufname(buf), ':p'))
    endif
    call s:ask(buf, linter, method, p, state.finish)
  endfor
endfunction
