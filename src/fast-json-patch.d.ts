// fast-json-patch ships its ES module build as index.mjs without typings of its own; they are the package's.
declare module 'fast-json-patch/index.mjs' {
  export * from 'fast-json-patch';
}
