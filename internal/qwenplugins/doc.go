// Package qwenplugins pins, against the real Qwen Code 0.24.4, what
// Qwen Code does with the Claude Code plugins it installs as its own
// extensions, and so why gemkit's switch does not take them yet
// (docs/claude-code-plugins.md, "Qwen Code"): its tests are the
// evidence, and fail when a later Qwen Code changes what they found.
package qwenplugins
