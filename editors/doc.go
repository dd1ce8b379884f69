// Package editors holds the editor plugins that make Neovim, Vim and Emacs
// Gemini CLI IDE companions through `gemkit ide serve --editor stdio`:
// nvim/ (Lua), vim/ (Vim9 script) and emacs/ (Emacs Lisp). It has no Go
// code of its own; its tests run each real editor headless with its plugin
// and drive it against the real companion and the client package.
// docs/editors.md explains how to install and use the plugins.
package editors
