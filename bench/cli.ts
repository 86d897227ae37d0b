/** `hermes-mesh bench`: placeholder until the harness lands (being written now). */
export async function runBenchCommand(_argv: string[]): Promise<number> {
  console.error("hermes-mesh bench: not available yet");
  return 2;
}
