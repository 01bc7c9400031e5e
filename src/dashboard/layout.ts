import { html, type Html } from './html.js';
import type { DashboardPage, ViewContext } from './page.js';

/** The whole page around a page's content: navigation, who is signed in, the refresh-rate picker. */
export function layout(p: {
  title: string;
  nonce: string;
  base: string;
  pages: readonly DashboardPage[];
  current: string;
  view: ViewContext;
  content: Html;
  live: boolean;
  liveUrl: string;
  flash?: string | null;
  flashError?: boolean;
}): Html {
  const nav = p.pages.filter((pg) => pg.nav !== false);
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        ${p.view.csrfMeta}
        <title>${p.title} · nightshift</title>
        <link rel="stylesheet" href="${p.base}/assets/app.css" nonce="${p.nonce}" />
      </head>
      <body data-live="${String(p.live)}" data-live-url="${p.liveUrl}">
        <header>
          <strong>nightshift</strong>
          <nav>${nav.map((pg) => html`<a href="${p.view.href(pg.path)}" class="${pg.id === p.current ? 'current' : ''}">${pg.title}</a>`)}</nav>
          <span class="who">
            ${
              p.live
                ? html`<label
                      >refresh
                      <select id="ns-rate">
                        <option value="0">off</option>
                        <option value="1000">1 s</option>
                        <option value="2000">2 s</option>
                        <option value="5000">5 s</option>
                        <option value="15000">15 s</option>
                        <option value="30000">30 s</option>
                      </select></label
                    >
                    <span id="ns-live-status" class="muted"></span>`
                : html`<a href="">reload</a>`
            }
            · signed in as <b id="ns-user">${p.view.user.name}</b>
          </span>
        </header>
        <main>${p.flash ? html`<div class="flash${p.flashError ? ' error' : ''}" role="status">${p.flash}</div>` : ''} ${p.content}</main>
        <script src="${p.base}/assets/app.js" nonce="${p.nonce}"></script>
      </body>
    </html>`;
}
