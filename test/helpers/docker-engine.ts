/**
 * The gate of the tests that need a Docker engine: they run when an engine answers (DOCKER_HOST or
 * the local socket) and has the images they need, and are skipped with the reason printed
 * otherwise; under SWERL_REQUIRE_DOCKER=1 (CI starts an engine: scripts/start-dockerd.sh) a
 * missing engine, image or data file fails the test file instead.
 */
import { existsSync } from 'node:fs';
import Docker from 'dockerode';
import { dockerAvailable } from '../../src/index.js';

/**
 * Whether the tests named `what` can run here: an engine answers, `images` exist in it and
 * `files` exist on disk. Prints why not (and returns false), or throws under SWERL_REQUIRE_DOCKER=1.
 * `imageHint` says how to get a missing image.
 */
export async function dockerTestsCanRun(
  what: string,
  o: { images?: string[]; files?: string[]; imageHint?: string } = {},
): Promise<boolean> {
  const reason = await whyNot(o.images ?? [], o.files ?? [], o.imageHint);
  if (reason === null) return true;
  const message = `${what}: ${reason}`;
  if (process.env.SWERL_REQUIRE_DOCKER === '1') throw new Error(`SWERL_REQUIRE_DOCKER=1, but ${message}`);
  console.warn(`${message}: skipped`);
  return false;
}

async function whyNot(images: string[], files: string[], imageHint?: string): Promise<string | null> {
  for (const f of files) if (!existsSync(f)) return `${f} is missing`;
  if (!(await dockerAvailable()))
    return 'no Docker engine is reachable (scripts/start-dockerd.sh DIR, then export DOCKER_HOST)';
  const docker = new Docker();
  for (const image of images) {
    try {
      await docker.getImage(image).inspect();
    } catch {
      return `the engine has no image ${image}${imageHint ? ` (${imageHint})` : ''}`;
    }
  }
  return null;
}
