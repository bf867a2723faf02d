/**
 * A cache of values worked out from a text a tenant sends (a hook's cleanup script), bounded both in entries and in
 * the characters it holds: every request may bring a new text, so the cache never grows with them. The least
 * recently used entry goes first; a text larger than a sixteenth of the bound is never kept, so one request cannot
 * empty it.
 */
export class BoundedCache<V> {
  private readonly entries = new Map<string, { value: V; size: number }>();
  private size = 0;

  /** `sizeOf`: the characters a value holds besides its key. */
  constructor(
    private readonly maxEntries: number,
    private readonly maxChars: number,
    private readonly sizeOf: (value: V) => number,
  ) {}

  /** The value for `key`, worked out with `compute` when the cache does not hold it. */
  get(key: string, compute: (key: string) => V): V {
    const hit = this.entries.get(key);
    if (hit !== undefined) {
      // Moved to the end of the Map's order: the most recently used.
      this.entries.delete(key);
      this.entries.set(key, hit);
      return hit.value;
    }
    const value = compute(key);
    const size = key.length + this.sizeOf(value);
    if (size > this.maxChars / 16) return value;
    this.entries.set(key, { value, size });
    this.size += size;
    for (const [oldest, entry] of this.entries) {
      if (this.entries.size <= this.maxEntries && this.size <= this.maxChars) break;
      this.entries.delete(oldest);
      this.size -= entry.size;
    }
    return value;
  }

  /** How many entries and characters it holds (for its tests). */
  get held(): { entries: number; chars: number } {
    return { entries: this.entries.size, chars: this.size };
  }
}
