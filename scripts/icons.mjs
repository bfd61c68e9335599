#!/usr/bin/env node
/**
 * `npm run icons`: every icon of the app from one vector master, resources/icon.svg.
 *
 *   resources/icons/NxN.png      the app icon, 16…1024 (Linux packages, the window icon)
 *   resources/icon.ico           16…256, PNG-compressed entries (Windows, NSIS)
 *   resources/icon.icns          16…1024, PNG-compressed entries (macOS, dmg)
 *   resources/tray/…             monochrome tray icons per status: `…Template.png` (macOS
 *                                template images, black), `-light` (dark glyph, for light panels)
 *                                and `-dark` (white glyph, for dark panels), 16 and 32 px, each
 *                                with its @2x
 *   src-renderer/public/icons/   the web UI's favicons, apple-touch-icon and manifest icons
 *                                (Vite copies public/ into the built renderer as is)
 *
 * The generated files are committed; run this after changing the master. ICO and ICNS both
 * embed PNGs, so their containers are written here (a few lines each) rather than by a package.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const resources = join(root, 'resources');
const webIcons = join(root, 'src-renderer', 'public', 'icons');

export const APP_SIZES = [16, 32, 48, 64, 128, 256, 512, 1024];
export const ICO_SIZES = [16, 24, 32, 48, 64, 128, 256];
/** ICNS entry types that hold a PNG, by pixel size (two names where macOS has a @2x slot too). */
export const ICNS_TYPES = [
  ['icp4', 16],
  ['icp5', 32],
  ['ic11', 32], // 16@2x
  ['icp6', 64],
  ['ic12', 64], // 32@2x
  ['ic07', 128],
  ['ic08', 256],
  ['ic13', 256], // 128@2x
  ['ic09', 512],
  ['ic14', 512], // 256@2x
  ['ic10', 1024], // 512@2x
];
export const TRAY_STATES = ['idle', 'busy', 'error'];

/** The master's parts: its <defs>, the tile and the streams (found by id). */
function parts(svg) {
  const pick = (re, what) => {
    const m = re.exec(svg);
    if (!m) throw new Error(`resources/icon.svg has no ${what}`);
    return m[0];
  };
  return {
    defs: pick(/<defs>[\s\S]*?<\/defs>/, '<defs>'),
    tile: pick(/<rect id="tile"[^>]*\/>/, '<rect id="tile">'),
    streams: pick(/<g id="streams"[\s\S]*?<\/g>/, '<g id="streams">'),
  };
}

const svgDoc = (viewBox, body) => `<svg xmlns="http://www.w3.org/2000/svg" width="1024" height="1024" viewBox="${viewBox}">${body}</svg>`;

/** Full-bleed square with the streams inside the central 80 % circle: maskable web icon, apple-touch-icon. */
function fullBleed({ defs, tile, streams }) {
  const fill = /fill="([^"]+)"/.exec(tile)[1];
  return svgDoc('0 0 1024 1024', `${defs}<rect width="1024" height="1024" fill="${fill}"/><g transform="translate(512 512) scale(0.72) translate(-536 -512)">${streams}</g>`);
}

/**
 * The streams alone in one colour, cropped to their extent, with a status badge: a dot while
 * files move, a warning triangle after an error. Monochrome, as tray icons are everywhere.
 */
function trayGlyph({ streams }, state, colour) {
  const glyph = streams.replace(/stroke="[^"]*"/, `stroke="${colour}"`);
  const badge =
    state === 'busy'
      ? `<circle cx="850" cy="800" r="118" fill="${colour}"/>`
      : state === 'error'
        ? `<path d="M850 652 L966 900 L734 900 Z" fill="${colour}" stroke="${colour}" stroke-width="24" stroke-linejoin="round"/>`
        : '';
  return svgDoc('128 92 840 840', glyph + badge);
}

/** One PNG of exactly size × size from an SVG document 1024 units wide. */
export function rasterise(svg, size) {
  return sharp(Buffer.from(svg), { density: (72 * size) / 1024 })
    .resize(size, size, { fit: 'fill' })
    .png({ compressionLevel: 9 })
    .toBuffer();
}

/** ICO with PNG entries (Windows Vista and later read these; 256 is stored as 0). */
export function icoFile(pngs) {
  const header = Buffer.alloc(6);
  header.writeUInt16LE(0, 0);
  header.writeUInt16LE(1, 2); // 1 = icon
  header.writeUInt16LE(pngs.length, 4);
  const entries = [];
  let offset = 6 + 16 * pngs.length;
  for (const { size, data } of pngs) {
    const e = Buffer.alloc(16);
    e.writeUInt8(size >= 256 ? 0 : size, 0);
    e.writeUInt8(size >= 256 ? 0 : size, 1);
    e.writeUInt8(0, 2); // no palette
    e.writeUInt8(0, 3);
    e.writeUInt16LE(1, 4); // planes
    e.writeUInt16LE(32, 6); // bits per pixel
    e.writeUInt32LE(data.length, 8);
    e.writeUInt32LE(offset, 12);
    entries.push(e);
    offset += data.length;
  }
  return Buffer.concat([header, ...entries, ...pngs.map((p) => p.data)]);
}

/** ICNS: big-endian 'icns' + total length, then (type, length incl. 8-byte header, PNG) entries. */
export function icnsFile(entries) {
  const chunks = entries.map(({ type, data }) => {
    const h = Buffer.alloc(8);
    h.write(type, 0, 'latin1');
    h.writeUInt32BE(data.length + 8, 4);
    return Buffer.concat([h, data]);
  });
  const header = Buffer.alloc(8);
  header.write('icns', 0, 'latin1');
  header.writeUInt32BE(8 + chunks.reduce((n, c) => n + c.length, 0), 4);
  return Buffer.concat([header, ...chunks]);
}

async function main() {
  const master = await readFile(join(resources, 'icon.svg'), 'utf8');
  const p = parts(master);
  const png = new Map();
  const appPng = async (size) => {
    if (!png.has(size)) png.set(size, await rasterise(master, size));
    return png.get(size);
  };
  const written = [];
  const write = async (file, data) => {
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, data);
    written.push(file.slice(root.length + 1));
  };

  for (const size of APP_SIZES) await write(join(resources, 'icons', `${size}x${size}.png`), await appPng(size));
  await write(join(resources, 'icon.ico'), icoFile(await Promise.all(ICO_SIZES.map(async (size) => ({ size, data: await appPng(size) })))));
  await write(join(resources, 'icon.icns'), icnsFile(await Promise.all(ICNS_TYPES.map(async ([type, size]) => ({ type, data: await appPng(size) })))));

  for (const state of TRAY_STATES) {
    const variants = [
      [`${state}Template`, '#000000'],
      [`${state}-light`, '#1d2430'],
      [`${state}-dark`, '#ffffff'],
    ];
    for (const [name, colour] of variants) {
      const svg = trayGlyph(p, state, colour);
      await write(join(resources, 'tray', `${name}.png`), await rasterise(svg, 16));
      await write(join(resources, 'tray', `${name}@2x.png`), await rasterise(svg, 32));
      if (name.endsWith('Template')) continue; // macOS menu bars are 16 pt
      await write(join(resources, 'tray', `${name}-32.png`), await rasterise(svg, 32));
      await write(join(resources, 'tray', `${name}-32@2x.png`), await rasterise(svg, 64));
    }
  }

  const bleed = fullBleed(p);
  await write(join(webIcons, 'icon.svg'), master);
  await write(join(webIcons, 'favicon-32.png'), await appPng(32));
  await write(join(webIcons, 'icon-192.png'), await rasterise(master, 192));
  await write(join(webIcons, 'icon-512.png'), await appPng(512));
  await write(join(webIcons, 'maskable-192.png'), await rasterise(bleed, 192));
  await write(join(webIcons, 'maskable-512.png'), await rasterise(bleed, 512));
  // iOS draws transparency black and rounds the corners itself: the full-bleed square.
  await write(join(webIcons, 'apple-touch-icon.png'), await rasterise(bleed, 180));

  console.log(`${written.length} icons written:\n  ${written.join('\n  ')}`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().catch((e) => {
    console.error(e instanceof Error ? e.message : e);
    process.exit(1);
  });
}
