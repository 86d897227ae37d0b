import pkg from "../package.json" with { type: "json" };

/**
 * The hermes-mesh package version.
 *
 * @example
 * console.log(`hermes-mesh ${VERSION}`);
 */
export const VERSION: string = pkg.version;
