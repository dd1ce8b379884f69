" gemkit.vim: Vim as a Gemini CLI IDE companion. See docs/editors.md.
" Options (set them before this file loads, e.g. in your vimrc):
"   g:gemkit_cmd               gemkit binary (default 'gemkit')
"   g:gemkit_args              extra arguments, e.g. ['-v'] (default [])
"   g:gemkit_workspace         workspace folders (default: the cwd at start)
"   g:gemkit_ide_name          'vim';  g:gemkit_ide_display_name  'Vim'
"   g:gemkit_autostart         start when Vim starts (default 1)
"   g:gemkit_follow_cwd        send :cd changes as the workspace (default 1)
"   g:gemkit_poll_ms           check for deleted files every N ms (default 1000)
if exists('g:loaded_gemkit') || !has('job') || !has('channel') || v:version < 802
  finish
endif
let g:loaded_gemkit = 1

command! -bar GemkitStart call gemkit#start()
command! -bar GemkitStop call gemkit#stop()
command! -bar GemkitStatus echo gemkit#status()
command! -bar GemkitLog call gemkit#show_log()
command! -bar GemkitAccept call gemkit#accept()
command! -bar GemkitReject call gemkit#reject()
command! -bar -range=0 GemkitMention if <count> | call gemkit#mention(<line1>, <line2>) | else | call gemkit#mention() | endif

" s:ex_mode tells Ex mode (vim -e, -es: scripts) apart, where no one works
" with Gemini CLI and gemkit is not started.
function! s:ex_mode() abort
  return exists('v:argv') && !empty(filter(copy(v:argv), 'v:val =~# ''^-[eE]s\=$'''))
endfunction

augroup gemkit
  autocmd!
  autocmd BufEnter,WinEnter,FocusGained * call gemkit#on_enter()
  autocmd BufWritePost * call gemkit#on_write(str2nr(expand('<abuf>')))
  autocmd CursorMoved,CursorMovedI * call gemkit#report('editor/selection')
  if exists('##ModeChanged')
    autocmd ModeChanged * call gemkit#on_mode_changed()
  endif
  autocmd BufDelete,BufWipeout * call gemkit#on_buf_gone(str2nr(expand('<abuf>')))
  autocmd BufFilePost * call gemkit#on_rename(str2nr(expand('<abuf>')))
  autocmd DirChanged global call gemkit#on_cd()
  autocmd VimLeavePre * call gemkit#stop(2000)
  if get(g:, 'gemkit_autostart', 1) && !s:ex_mode()
    autocmd VimEnter * ++once call gemkit#start()
  endif
augroup END
