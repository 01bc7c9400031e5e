import pg from 'pg';

/** A LISTEN connection of its own on `channel`, collecting every payload it hears; `end()` closes it. */
export async function listenTo(url: string, channel: string): Promise<{ heard: string[]; end: () => Promise<void> }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const heard: string[] = [];
  client.on('notification', (m) => heard.push(m.payload ?? ''));
  await client.query(`LISTEN "${channel}"`);
  return { heard, end: () => client.end() };
}
