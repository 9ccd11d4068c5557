// Graph layouts arrive asynchronously; the view marks its canvas aria-busy until the drawing is in.

/** Resolves once no graph view under `root` is waiting for a layout (fails after `seconds`). */
export async function settled(root, seconds = 120) {
  const deadline = Date.now() + seconds * 1000;
  while (root.querySelector('[aria-busy="true"]')) {
    if (Date.now() > deadline) {
      throw new Error(`a layout was still pending after ${seconds} s`);
    }
    await new Promise(resolve => setTimeout(resolve, 2));
  }
}
