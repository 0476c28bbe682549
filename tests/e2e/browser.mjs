// The two browsers the end-to-end test runs in, behind one small API.
//
// Chromium is driven by playwright-core over CDP; its persistent context
// and pages are used as they are. Firefox ESR is driven by puppeteer-core
// over WebDriver BiDi (Playwright's Firefox is a patched build that Debian
// does not ship); `FirefoxContext` and `FirefoxPage` give its browser and
// pages the subset of Playwright's API the checks use:
//   context.newPage(), context.addInitScript(fn), context.close();
//   page.goto, evaluate(fn, arg), waitForFunction(fn, arg, {timeout,
//   polling}), waitForTimeout, screenshot, setViewportSize, textContent,
//   click, locator(sel).{screenshot,click,scrollIntoViewIfNeeded,first},
//   setInputFiles,
//   addInitScript, on(console|pageerror|requestfailed|response), keyboard,
//   mouse, selectOption, fill, emulateMedia, waitForSelector(sel)
//   .contentFrame().{evaluate,waitForFunction}, close.
// Downloads differ: Playwright hands over the file; in Firefox an init
// script keeps the Blob behind every `<a download>` click instead
// (`download` below reads it back), so both paths check the page's bytes.
import { chromium } from "playwright-core";
import puppeteer from "puppeteer-core";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

// WebGPU on SwiftShader; the Vulkan/ANGLE SwiftShader flags give the GPU
// process a shared-image backend for WebGPU canvases (without them the
// first presented frame kills the WebGPU instance in headless Chromium,
// and read-backs fail: the page's "plain headless" check).
export const CHROME_ARGS = [
  "--headless=new", "--no-sandbox", "--enable-unsafe-webgpu", "--disable-quic",
  "--no-first-run", "--disable-background-networking", "--disable-component-update",
  "--disable-sync", "--enable-features=Vulkan", "--use-vulkan=swiftshader",
  "--use-angle=swiftshader", "--enable-unsafe-swiftshader",
];

// Firefox ESR ships WebGPU behind these prefs; on lavapipe it also needs
// the blocklist ignored (a software Vulkan device is blocklisted).
export const FIREFOX_PREFS = {
  "dom.webgpu.enabled": true,
  "gfx.webgpu.ignore-blocklist": true,
  "gfx.webgpu.force-enabled": true,
  // No update checks, telemetry or first-run pages in a test profile.
  "app.update.enabled": false,
  "browser.shell.checkDefaultBrowser": false,
  "datareporting.policy.dataSubmissionEnabled": false,
  "toolkit.telemetry.enabled": false,
};

export const BROWSERS = ["chromium", "firefox"];

/// Launches `name` ("chromium" or "firefox") with WebGPU on the CPU and
/// returns a context whose pages have the API above.
export async function launch(name, { userDir, viewport }) {
  if (name === "chromium") {
    return chromium.launchPersistentContext(userDir, {
      executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
      headless: true, args: CHROME_ARGS, acceptDownloads: true, viewport,
    });
  }
  if (name === "firefox") {
    const browser = await puppeteer.launch({
      browser: "firefox", executablePath: process.env.FIREFOX || "/usr/bin/firefox-esr",
      headless: true, userDataDir: userDir, extraPrefsFirefox: FIREFOX_PREFS,
      defaultViewport: viewport, protocolTimeout: 300000,
    });
    return new FirefoxContext(browser, viewport);
  }
  throw new Error(`unknown browser ${name}: one of ${BROWSERS.join(", ")}`);
}

/// One line per browser for the log: its version, the WebGPU adapter's
/// features and the limits the page's budget depends on.
export async function describeWebGpu(page) {
  return page.evaluate(async () => {
    if (!navigator.gpu) return { webgpu: false, userAgent: navigator.userAgent };
    const a = await navigator.gpu.requestAdapter();
    if (!a) return { webgpu: true, adapter: null, userAgent: navigator.userAgent };
    const keys = ["maxStorageBufferBindingSize", "maxBufferSize", "maxComputeWorkgroupStorageSize",
      "maxStorageBuffersPerShaderStage", "maxComputeInvocationsPerWorkgroup", "maxComputeWorkgroupsPerDimension",
      "maxBindGroups", "maxTextureDimension2D"];
    const info = a.info || {};
    return {
      userAgent: navigator.userAgent,
      adapter: [info.vendor, info.architecture, info.device, info.description].filter(Boolean).join(" ") || "(no info)",
      features: [...a.features].sort(),
      limits: Object.fromEntries(keys.map((k) => [k, a.limits[k]])),
    };
  });
}

/// Downloads what clicking `selector` offers into `file`; returns the
/// name the page gave it.
export async function download(page, selector, file) {
  if (page instanceof FirefoxPage) {
    const before = await page.evaluate(() => window.__downloads.length);
    await page.click(selector);
    await page.waitForFunction((n) => window.__downloads.length > n, before, { timeout: 60000, polling: 100 });
    const { name, base64 } = await page.evaluate(async (n) => {
      const d = window.__downloads[n];
      const bytes = new Uint8Array(await d.blob.arrayBuffer());
      let s = "";
      for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
      return { name: d.name, base64: btoa(s) };
    }, before);
    fs.writeFileSync(file, Buffer.from(base64, "base64"));
    return name;
  }
  const [dl] = await Promise.all([page.waitForEvent("download", { timeout: 60000 }), page.click(selector)]);
  await dl.saveAs(file);
  return dl.suggestedFilename();
}

// Keeps the Blob of every object URL and, instead of saving, the Blob
// behind every `<a download>` click (runs in the page before its scripts).
function keepDownloads() {
  window.__downloads = [];
  const blobs = new Map();
  const create = URL.createObjectURL;
  URL.createObjectURL = function (obj) {
    const url = create.call(URL, obj);
    if (obj instanceof Blob) blobs.set(url, obj);
    return url;
  };
  const click = HTMLAnchorElement.prototype.click;
  HTMLAnchorElement.prototype.click = function () {
    if (this.hasAttribute("download") && blobs.has(this.href)) {
      window.__downloads.push({ name: this.download, blob: blobs.get(this.href) });
      return;
    }
    return click.call(this);
  };
}

class FirefoxContext {
  constructor(browser, viewport) {
    this.browser = browser;
    this.viewport = viewport;
    this.initScripts = [keepDownloads];
  }
  async addInitScript(fn) { this.initScripts.push(fn); }
  async newPage() {
    const page = await this.browser.newPage();
    for (const fn of this.initScripts) await page.evaluateOnNewDocument(fn);
    if (this.viewport) await page.setViewport(this.viewport);
    return new FirefoxPage(page);
  }
  async close() { await this.browser.close(); }
}

class FirefoxPage {
  constructor(page) {
    this.page = page;
    this.keyboard = page.keyboard;
    this.mouse = page.mouse;
  }
  goto(url) { return this.page.goto(url); }
  evaluate(fn, arg) { return this.page.evaluate(fn, arg); }
  waitForFunction(fn, arg, { timeout = 30000, polling = 250 } = {}) {
    return this.page.waitForFunction(fn, { timeout, polling }, arg);
  }
  waitForTimeout(ms) { return new Promise((r) => setTimeout(r, ms)); }
  screenshot(options) { return this.page.screenshot(options); }
  setViewportSize({ width, height }) { return this.page.setViewport({ width, height }); }
  textContent(selector) { return this.page.$eval(selector, (e) => e.textContent); }
  selectOption(selector, value) { return this.page.select(selector, value); }
  fill(selector, value) { return this.page.locator(selector).fill(value); }
  emulateMedia({ media }) { return this.page.emulateMediaType(media); }
  async waitForSelector(selector) {
    const element = await this.page.waitForSelector(selector);
    return {
      contentFrame: async () => {
        const frame = await element.contentFrame();
        return {
          evaluate: (fn, arg) => frame.evaluate(fn, arg),
          waitForFunction: (fn, arg, { timeout = 30000, polling = 250 } = {}) =>
            frame.waitForFunction(fn, { timeout, polling }, arg),
        };
      },
    };
  }
  // A DOM click: Firefox's input actions wait for an animation frame, and
  // a page whose WebGPU device is lost gets none (its export buttons must
  // still be clicked). Chromium's clicks stay pointer clicks.
  click(selector) { return this.page.$eval(selector, (e) => e.click()); }
  addInitScript(fn) { return this.page.evaluateOnNewDocument(fn); }
  on(event, handler) { this.page.on(event, handler); }
  close() { return this.page.close(); }
  locator(selector) {
    const element = async () => {
      const e = await this.page.$(selector);
      if (!e) throw new Error(`no element matches ${selector}`);
      return e;
    };
    const api = {
      screenshot: async (options) => (await element()).screenshot(options),
      click: async () => (await element()).evaluate((e) => e.click()),
      scrollIntoViewIfNeeded: async () => (await element()).evaluate((e) => e.scrollIntoView({ block: "nearest" })),
      first: () => api, // page.$ is the first match already
    };
    return api;
  }
  // A path, a list of paths, or Playwright's {name, mimeType, buffer}
  // (written to a temporary file of that name first).
  async setInputFiles(selector, files) {
    const list = (Array.isArray(files) ? files : [files]).map((f) => {
      if (typeof f === "string") return f;
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "webgrav-upload-"));
      const file = path.join(dir, f.name);
      fs.writeFileSync(file, f.buffer);
      return file;
    });
    const input = await this.page.$(selector);
    await input.uploadFile(...list);
  }
}
