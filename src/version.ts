import pkg from "../package.json" with { type: "json" };

/** The hermes-mesh package version. */
export const VERSION: string = pkg.version;
