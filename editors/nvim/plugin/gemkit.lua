-- Commands of gemkit.nvim. Nothing starts until require('gemkit').setup{}
-- (autostart) or :GemkitStart.
if vim.g.loaded_gemkit then
  return
end
vim.g.loaded_gemkit = true

local function cmd(name, fn, desc)
  vim.api.nvim_create_user_command(name, fn, { desc = desc })
end

cmd('GemkitStart', function()
  require('gemkit').start()
end, 'Start the Gemini CLI companion (gemkit)')
cmd('GemkitStop', function()
  require('gemkit').stop()
end, 'Stop the Gemini CLI companion')
cmd('GemkitStatus', function()
  print(require('gemkit').status())
end, 'Show where the companion serves')
cmd('GemkitLog', function()
  require('gemkit').show_log()
end, "Show gemkit's log")
cmd('GemkitAccept', function()
  require('gemkit').accept()
end, 'Accept the proposed change (with your edits)')
cmd('GemkitReject', function()
  require('gemkit').reject()
end, 'Reject the proposed change')
vim.api.nvim_create_user_command('GemkitMention', function(o)
  if o.range > 0 then
    require('gemkit').mention(o.line1, o.line2)
  else
    require('gemkit').mention()
  end
end, { range = true, desc = "Mention this file (and the range's lines) in Claude Code's prompt" })
