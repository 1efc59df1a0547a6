// One subscription (/app/webhooks/:id): its facts, the actions on it
// (enable or disable, a test event, rotate the secret, delete) and its
// deliveries (deliveries.js).
import { h, showError, announce, spinner, confirmDialog } from '../ui.js';
import { put, when, canWrite, secretBox, enabledBadge, attemptSummary, errorParts } from './parts.js';
import { deliveriesSection } from './deliveries.js';

export async function renderOne(main, id, ctx) {
  const controller = new AbortController();
  const signal = controller.signal;
  const base = `/webhooks/${encodeURIComponent(id)}`;
  const backLink = h('a', { class: 'back', href: '/app/webhooks', text: '\u2190 Webhooks' });
  put(main, backLink, h('h1', { text: 'Subscription' }), spinner('Loading the subscription\u2026'));
  let w;
  try {
    w = await ctx.api('GET', base, { signal });
  } catch (err) {
    if (signal.aborted) return;
    put(main, backLink, h('h1', { text: 'Subscription' }));
    showError(main, err);
    return () => controller.abort();
  }
  if (signal.aborted) return;
  const writer = canWrite(ctx);

  const heading = h('h1', { tabindex: '-1' });
  const facts = h('dl', { class: 'facts' });
  const outcome = h('div', { class: 'outcome', 'aria-live': 'polite' });
  const actions = h('div', { class: 'actions webhook-actions' });
  const deliveries = h('section', { class: 'deliveries', 'aria-labelledby': 'deliveries-heading' });

  const showSub = () => {
    heading.textContent = w.name || w.url;
    document.title = `${heading.textContent} \u00b7 Webhooks \u00b7 Switchboard`;
    put(facts,
      h('dt', { text: 'State' }), h('dd', null, enabledBadge(w)),
      h('dt', { text: 'Endpoint' }), h('dd', null, h('code', { class: 'url', text: w.url })),
      h('dt', { text: 'Event type' }), h('dd', null, h('code', { text: w.type })),
      w.description ? [h('dt', { text: 'Description' }), h('dd', { text: w.description })] : null,
      h('dt', { text: 'Created' }), h('dd', { text: when(w.createdAt) }),
      h('dt', { text: 'Updated' }), h('dd', { text: when(w.updatedAt) }));
    if (!writer) { put(actions); return; }
    put(actions,
      button(w.enabled ? 'Disable' : 'Enable', w.enabled ? 'btn' : 'btn btn-primary', toggle),
      button('Send a test event', 'btn', test),
      button('Rotate secret\u2026', 'btn', rotate),
      button('Delete\u2026', 'btn btn-danger', remove));
  };

  const button = (label, cls, fn) => {
    const b = h('button', { type: 'button', class: cls || 'btn', text: label });
    b.addEventListener('click', async () => {
      b.disabled = true;
      b.setAttribute('aria-busy', 'true');
      try {
        await fn();
      } catch (err) {
        put(outcome);
        showError(outcome, err);
      } finally {
        b.disabled = false;
        b.removeAttribute('aria-busy');
      }
    });
    return b;
  };

  const toggle = async () => {
    w = await ctx.api('POST', `${base}/${w.enabled ? 'disable' : 'enable'}`);
    showSub();
    const text = w.enabled ? 'Enabled: new events are delivered to this endpoint.' : 'Disabled: this endpoint receives nothing until enabled again.';
    put(outcome, h('p', { class: 'success', text }));
    actions.querySelector('button').focus();
  };

  const test = async () => {
    put(outcome, spinner('Sending a test event\u2026'));
    const d = await ctx.api('POST', `${base}/test`);
    const a = d.lastAttempt;
    put(outcome, d.state === 'succeeded'
      ? h('p', { class: 'success' }, `Test event delivered: the endpoint answered ${attemptSummary(a)}.`)
      : h('p', { class: 'error' }, `Test event not delivered: ${attemptSummary(a)}. `, a && a.error ? errorParts(a.error) : null));
    await list.load(true);
  };

  const rotate = async () => {
    const yes = await confirmDialog('Rotate the signing secret?',
      'A new secret signs every delivery from now on. The current one keeps signing beside it for 24 hours, so your receiver can switch over.',
      'Rotate secret');
    if (!yes) return;
    const s = await ctx.api('POST', `${base}/secret/rotate`);
    const box = secretBox(s.secret, 'The new signing secret.');
    const prev = (s.previousSecrets || []).map((p) => p.expiresAt).filter(Boolean);
    put(outcome, box, prev.length ? h('p', { class: 'muted', text: `The previous secret signs until ${when(prev[0])}.` }) : null);
    box.focus();
  };

  const remove = async () => {
    const yes = await confirmDialog('Delete this subscription?',
      `${w.url} will receive no more events, and deliveries not yet made are dropped. This cannot be undone.`,
      'Delete subscription');
    if (!yes) return;
    await ctx.api('DELETE', base);
    announce('Subscription deleted.');
    ctx.navigate('/webhooks');
  };

  const list = deliveriesSection(ctx, { base, signal, writer, section: deliveries, outcome, button });
  put(main, backLink, heading, facts, actions, outcome, deliveries);
  showSub();
  list.start();
  heading.focus();
  return () => { controller.abort(); list.stop(); };
}


