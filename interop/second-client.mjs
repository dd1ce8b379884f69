// A second real Gemini CLI client (IdeClient from @google/gemini-cli-core),
// forked by companion-interop.mjs so that two CLIs are connected to one
// companion at once. It takes orders over the fork IPC channel and answers
// there; its stdout carries nothing.
for (const level of ['log', 'debug', 'info', 'warn']) {
  console[level] = (...args) => process.stderr.write('[client 2] ' + args.map(String).join(' ') + '\n');
}
process.stdout.write = (chunk, ...rest) => process.stderr.write(chunk, ...rest);
process.on('unhandledRejection', (err) => process.stderr.write(`[client 2] unhandled rejection: ${err?.message ?? err}\n`));

const { IdeClient, ideContextStore } = await import('@google/gemini-cli-core');
const client = await IdeClient.getInstance();
await client.connect({ logToConsole: false });
process.send({
  type: 'connected',
  status: client.getConnectionStatus().status,
  diffing: client.isDiffingEnabled(),
});

process.on('message', async (msg) => {
  try {
    switch (msg.type) {
      case 'context':
        process.send({ type: 'context', files: ideContextStore.get()?.workspaceState?.openFiles ?? null });
        break;
      case 'closeDiff':
        process.send({ type: 'closed', content: await client.closeDiff(msg.path) ?? null });
        break;
      case 'openDiff':
        // Answered only when the diff resolves, or never if this process is
        // killed first (a client that vanishes mid-diff).
        process.send({ type: 'diffResult', result: await client.openDiff(msg.path, msg.content) });
        break;
      case 'status':
        process.send({ type: 'status', status: client.getConnectionStatus().status });
        break;
      case 'exit':
        await client.disconnect();
        process.exit(0);
    }
  } catch (err) {
    process.send({ type: 'error', message: String(err?.message ?? err) });
  }
});
