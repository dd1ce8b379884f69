// Runs hooks as Gemini CLI 0.61 runs them, for hookout's differential
// tests: its own HookRunner.executeHook and HookAggregator on a command
// that writes the files of a case (out on stdout, err on stderr) and
// exits with the code in the file code, then asks the aggregated output
// what Gemini CLI acts on (the methods of hooks/types.ts its callers
// use). Each input on stdin is one line, "EVENT DIR"; each answer on
// stdout is one line of JSON: {"success", "exitCode", "format",
// "effects"}, effects null for no output, or the string "throws" when
// Gemini CLI's aggregation throws.
// Usage: node hookrunner.mjs INTEROP_DIR
import path from 'node:path';
import readline from 'node:readline';
import { pathToFileURL } from 'node:url';

// Gemini CLI's debug logger writes to the console: kept off stdout.
for (const k of ['log', 'debug', 'info', 'warn', 'error']) console[k] = () => {};

const hooks = path.join(process.argv[2], 'node_modules/@google/gemini-cli-core/dist/src/hooks/');
const load = (f) => import(pathToFileURL(hooks + f).href);
const { HookRunner } = await load('hookRunner.js');
const { HookAggregator } = await load('hookAggregator.js');

const runner = new HookRunner({
  storage: { getPlansDir: () => '/tmp' },
  sanitizationConfig: {},
  isTrustedFolder: () => true,
});
const base = { model: 'gemini-2.5-pro', config: { temperature: 0.5 }, contents: [{ role: 'user', parts: [{ text: 'hi' }] }] };

function call(f) {
  try {
    const v = f();
    return v === undefined ? null : v;
  } catch {
    return 'throws';
  }
}

// effects is what Gemini CLI's callers read of out (core/client.ts,
// core/coreToolHookTriggers.ts, scheduler/hook-utils.ts,
// hooks/hookSystem.ts, core/geminiChat.ts, the CLI's SessionStart).
function effects(event, out) {
  const e = {
    stop: out.shouldStopExecution(),
    reason: out.getEffectiveReason(),
    blocked: out.isBlockingDecision(),
    ask: out.isAskDecision(),
    // Shown only when truthy (logHookExecution, processCommonHookOutputFields).
    systemMessage: out.systemMessage || null,
    suppress: Boolean(out.suppressOutput),
    // Used only when truthy (its callers test `if (additionalContext)`).
    context: call(() => out.getAdditionalContext() || null),
    clearContext: out.shouldClearContext(),
  };
  // Only executeToolWithHooks reads a tail call, of an AfterTool hook.
  if (event === 'AfterTool') e.tail = call(() => out.getTailToolCallRequest());
  if (event === 'BeforeTool') e.toolInput = call(() => out.getModifiedToolInput());
  if (event === 'BeforeModel') {
    e.synthetic = call(() => out.getSyntheticResponse());
    e.request = call(() => JSON.stringify(out.applyLLMRequestModifications(base)) !== JSON.stringify(base));
  }
  if (event === 'AfterModel') e.response = call(() => out.getModifiedResponse());
  if (event === 'BeforeToolSelection') e.toolConfig = call(() => out.applyToolConfigModifications({}).toolConfig);
  return e;
}

const rl = readline.createInterface({ input: process.stdin });
for await (const line of rl) {
  const [event, dir] = line.split(' ');
  const hook = {
    type: 'command',
    command: 'cat "$CASE/out"; cat "$CASE/err" >&2; exit "$(cat "$CASE/code")"',
    env: { CASE: dir },
  };
  const res = await runner.executeHook(hook, event, { cwd: dir, session_id: 's' });
  let eff;
  try {
    const agg = new HookAggregator().aggregateResults([res], event);
    eff = agg.finalOutput ? effects(event, agg.finalOutput) : null;
  } catch {
    eff = 'throws';
  }
  process.stdout.write(JSON.stringify({ success: res.success, exitCode: res.exitCode ?? null, format: res.outputFormat ?? null, effects: eff }) + '\n');
}
