// The bench runs from dist-bench/bench/ and measures the built package in dist/, the code `npm start` runs,
// not a second compilation of src/ (whose data files would not resolve from dist-bench/).

/** A module of the built package, typed as its source. */
export function fromDist<T>(path: string): Promise<T> {
  return import(new URL(`../../dist/${path}`, import.meta.url).href) as Promise<T>;
}
