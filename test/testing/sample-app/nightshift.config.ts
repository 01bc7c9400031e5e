// The sample app's config, as `nightshift worker` and `nightshift dev` load it.
import { defineConfig, defineSchedule } from 'nightshift';
import { chargeCard, createAccount, dailyDigest, sendWelcome, syncInbox } from './jobs.js';
import { dailyReport } from './report.js';

// #region config
export default defineConfig({
  jobs: [createAccount, sendWelcome, chargeCard, dailyDigest, syncInbox],
  pipelines: [dailyReport],
  schedules: [
    // 07:00 in Berlin, the day's date in the payload; after downtime, every digest of the last two
    // days is sent (side by side: a digest does not wait for the previous one).
    defineSchedule({
      name: 'daily-digest',
      cron: '0 7 * * *',
      tz: 'Europe/Berlin',
      job: dailyDigest,
      payload: ({ local }) => ({ day: local.date }),
      catchUp: { all: true, window: '2d' },
      overlap: 'allow',
    }),
  ],
  worker: { concurrency: 4 },
});
// #endregion
