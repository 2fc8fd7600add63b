import { render } from "preact";

function App() {
  return <main><h1>LineUp</h1><p>The relay is running.</p></main>;
}

render(<App />, document.getElementById("app")!);
