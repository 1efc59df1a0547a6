// The person's time zone (GET /me's user.timeZone, else the browser's):
// the one zone of the call screens, for the date window, the day-of-week
// and time-of-day filters and every time shown, named on screen.
import { store } from '../store.js';

const BROWSER = Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';

function valid(zone) {
  try { new Intl.DateTimeFormat(undefined, { timeZone: zone }); return true; } catch { return false; }
}

export function personZone() {
  const z = store.get('me')?.user?.timeZone;
  return z && valid(z) ? z : BROWSER;
}

// offsetMs is how far the zone's wall clock is ahead of UTC at an instant.
function offsetMs(ms, zone) {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone: zone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit',
  }).formatToParts(new Date(ms));
  const v = Object.fromEntries(parts.map((p) => [p.type, Number(p.value)]));
  return Date.UTC(v.year, v.month - 1, v.day, v.hour % 24, v.minute, v.second) - Math.floor(ms / 1000) * 1000;
}

// dayStart is the unix second a YYYY-MM-DD day (plus some days) begins in
// the zone.
export function dayStart(day, zone, plusDays = 0) {
  const [y, m, d] = day.split('-').map(Number);
  const wall = Date.UTC(y, m - 1, d + plusDays);
  let t = wall - offsetMs(wall, zone);
  t = wall - offsetMs(t, zone); // across a change of offset (summer time)
  return Math.floor(t / 1000);
}

// isoDay is an instant's calendar day in the zone, as YYYY-MM-DD.
export function isoDay(date, zone) {
  return new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(date);
}

// addDays moves a YYYY-MM-DD day by n days.
export function addDays(day, n) {
  const [y, m, d] = day.split('-').map(Number);
  return new Date(Date.UTC(y, m - 1, d + n)).toISOString().slice(0, 10);
}

export function formats(zone) {
  return {
    dateTime: new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short', timeZone: zone }),
    timeOnly: new Intl.DateTimeFormat(undefined, { timeStyle: 'medium', timeZone: zone }),
  };
}
