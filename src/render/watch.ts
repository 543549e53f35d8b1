import { watch } from 'chokidar';
import { dirname, join } from 'node:path';

/**
 * watchTemplateFiles calls `onChange` when the template or one of its partials is written,
 * replaced or removed (editors often write a new file and rename it over the old one).
 * Returns the function that stops watching.
 */
export function watchTemplateFiles(file: string, onChange: (path: string) => void): () => Promise<void> {
  const watcher = watch([file, join(dirname(file), 'partials')], {
    ignoreInitial: true,
    awaitWriteFinish: { stabilityThreshold: 50, pollInterval: 10 },
  });
  watcher.on('all', (_event, path) => onChange(path));
  return () => watcher.close();
}
