/** The console's entry: mounts the app into `#app` (index.html loads this module and the stylesheet, nothing inline). */
import { render } from 'preact';
import { App } from './app.tsx';
import './styles.css';

render(<App />, document.getElementById('app')!);
