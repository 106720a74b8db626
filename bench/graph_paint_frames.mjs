// Frame intervals of a graph page while the mouse zooms and pans (bench/graph_paint.mjs and
// bench/graph_peers.mjs measure every viewer the same way).

/** Frame intervals (ms) while the wheel zooms in and out and a drag pans. */
export async function frames(page, box) {
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  await page.evaluate(() => {
    window.__frames = [];
    let last = performance.now();
    const tick = (t) => {
      window.__frames.push(t - last);
      last = t;
      if (window.__frames.length < 400) requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  });
  for (let k = 0; k < 20; k++) await page.mouse.wheel(0, k < 10 ? -120 : 120);
  await page.mouse.down();
  for (let k = 0; k < 30; k++) await page.mouse.move(box.x + box.width / 2 + 10 * k, box.y + box.height / 2 + 5 * k);
  await page.mouse.up();
  const f = (await page.evaluate(() => window.__frames)).slice(1).sort((a, b) => a - b);
  return { p50: f[Math.floor(f.length * 0.5)], p95: f[Math.floor(f.length * 0.95)] };
}
