// (19) HDF5 snapshots in the page (run.mjs calls `hdf5Checks`;
// WEBGRAV_E2E_ONLY=hdf5 alone): a GADGET-4 file named in the URL opens
// with its N and time and is drawn as `webgrav render` draws the same
// file; a SWIFT file dropped on the page starts a run with its N and time;
// a damaged HDF5 file dropped is refused with a message and the run goes
// on; h5wasm is not loaded before the first HDF5 file.
import fs from "node:fs";
import path from "node:path";

// Drops `bytes` as a file named `name` on the page (the drop handler's
// own path: DataTransfer files).
async function drop(page, name, bytes) {
  await page.evaluate(({ name, b64 }) => {
    const bin = atob(b64);
    const u = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) u[i] = bin.charCodeAt(i);
    const dt = new DataTransfer();
    dt.items.add(new File([u], name));
    window.dispatchEvent(new DragEvent("drop", { dataTransfer: dt, bubbles: true, cancelable: true }));
  }, { name, b64: Buffer.from(bytes).toString("base64") });
}

const texts = (page) => page.evaluate(() => [...document.querySelectorAll("#message .msg .msg-text")].map((e) => e.textContent));

export async function hdf5Checks({ context, openApp, waitFor, check, ART, webgrav, DIST, pictures }) {
  const dir = path.join(DIST, "e2e-hdf5");
  fs.mkdirSync(dir, { recursive: true });
  try {
    const N = 600;
    const g4 = path.join(dir, "galaxy.hdf5");
    webgrav("run", "--model", "disk-galaxy", "-n", String(N), "--seed", "2", "--solver", "direct", "--eps", "0.05",
      "--dt", "0.0625", "--t-end", "0.25", "--out", g4);
    const swift = path.join(dir, "galaxy-swift.h5");
    webgrav("convert", g4, swift, "--to", "swift-hdf5");

    // A GADGET-4 file named in the URL: opened in the player, drawn as the
    // CLI draws it.
    const W = 480, H = 360, cam = { yaw: 0.6, pitch: 0.25, dist: 40 };
    const native = path.join(ART, "hdf5-native.png"), browser = path.join(ART, "hdf5-browser.png");
    webgrav("render", g4, "-o", native, "--width", String(W), "--height", String(H), "--yaw", String(cam.yaw),
      "--pitch", String(cam.pitch), "--distance", String(cam.dist), "--target", "0", "0", "0", "--color", "speed");
    const page = await openApp(context, `?embed=1&autoplay=0&n=64&solver=direct&eps=0.02&color=speed&yaw=${cam.yaw}` +
      `&pitch=${cam.pitch}&dist=${cam.dist}&tx=0&ty=0&tz=0&snapshot=e2e-hdf5%2Fgalaxy.hdf5`, { width: W, height: H });
    if (await waitFor(page, () => Player.frames.length === 1 && Player.shown === 0, null, 60000, "HDF5 file named in the URL opens")) {
      const r = await page.evaluate(() => {
        window.webgrav.app.render();
        return { frame: Player.frames[0], label: document.getElementById("series-label").textContent, url: window.webgrav.canvas.toDataURL("image/png"), csp: window.__csp };
      });
      check("h5wasm within the page's Content-Security-Policy", r.csp.length === 0, r.csp.join(" | "));
      check("HDF5 URL snapshot: its N and time", r.frame.n === N && r.frame.time === 0.25 && /N = 600/.test(r.label) && /t = 0\.25/.test(r.label), r.label);
      fs.writeFileSync(browser, Buffer.from(r.url.split(",")[1], "base64"));
      // run.mjs's comparison and bounds for every native-vs-browser picture.
      const { compareImages, pngStats, MAX_MEAN_ABS_DIFF, MAX_FRACTION_OFF } = pictures;
      const c = compareImages(native, browser, "hdf5-diff.png");
      const lit = c.error ? 0 : pngStats(browser).litFraction;
      check("HDF5 snapshot drawn as webgrav render draws it", !c.error && lit > 0.002 && c.meanAbs < MAX_MEAN_ABS_DIFF && c.fractionOff < MAX_FRACTION_OFF,
        c.error || `mean |diff| ${c.meanAbs.toFixed(3)}, ${(100 * c.fractionOff).toFixed(3)} % off, ${(100 * lit).toFixed(2)} % lit`);
    }
    await page.close();

    // A SWIFT file dropped on the page starts a run from it; h5wasm is
    // fetched only then.
    const run = await openApp(context, "?autoplay=0&n=64&solver=direct");
    const before = await run.evaluate(() => ({
      loaded: performance.getEntriesByType("resource").some((e) => /h5wasm/.test(e.name)),
      library: Hdf5.library !== null,
    }));
    check("h5wasm not loaded before an HDF5 file", !before.loaded && !before.library, JSON.stringify(before));
    await drop(run, "galaxy-swift.h5", fs.readFileSync(swift));
    if (await waitFor(run, (n) => window.webgrav.last && window.webgrav.last.n === n, N, 60000, "dropped SWIFT file starts a run")) {
      const m = await texts(run);
      const last = await run.evaluate(() => ({ n: window.webgrav.last.n, time: window.webgrav.last.time }));
      check("dropped SWIFT file: its N and time", m.some((t) => /Started from galaxy-swift\.h5: N = 600, t = 0\.25/.test(t)) && last.time >= 0.25,
        `${m.join(" | ")}; read-out N = ${last.n}, t = ${last.time}`);
    }
    // A damaged HDF5 file is refused by name; the run is left as it was.
    const cut = fs.readFileSync(swift).subarray(0, 3000);
    await drop(run, "cut.h5", cut);
    if (await waitFor(run, () => [...document.querySelectorAll("#message .msg-text")].some((e) => /cut\.h5/.test(e.textContent)), null, 30000, "damaged HDF5 file refused")) {
      const m = (await texts(run)).filter((t) => /cut\.h5/.test(t));
      const n = await run.evaluate(() => window.webgrav.last.n);
      check("damaged HDF5 file refused by name, the run kept", /Could not open cut\.h5: snapshot cut\.h5/.test(m[0]) && n === N, `${m[0]}; N = ${n}`);
    }
    await run.close();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
