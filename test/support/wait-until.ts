// Waiting on a real system (the cluster tests' control plane, the API server bench): poll until a check holds.

/** Polls check() until it returns a value other than undefined/false; fails naming what it waited for and last saw. */
export async function waitUntil<T>(
  what: string,
  check: () => Promise<T | undefined | false>,
  seconds = 60,
): Promise<T> {
  const deadline = Date.now() + seconds * 1000;
  let last = '';
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      last = error instanceof Error ? error.message : String(error);
    }
    if (Date.now() > deadline) throw new Error(`waited ${seconds} s for ${what}${last ? `; last: ${last}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}
