// Keeps one bad block (a renderer bug, content we did not expect) from taking the whole session view down:
// whatever throws while rendering inside it is replaced by a short notice; the rest of the thread stays.
import { Component, type ComponentChildren } from "preact";
import { t } from "../i18n.js";

type Props = { children: ComponentChildren };
type State = { failed: boolean };

export class ErrorBoundary extends Component<Props, State> {
  override state: State = { failed: false };

  static override getDerivedStateFromError(): State {
    return { failed: true };
  }

  override componentDidCatch(error: unknown): void {
    // A warning, not an error: the page itself is fine; this says which block failed and why.
    console.warn("LineUp: a content block could not be shown", error);
  }

  override render() {
    return this.state.failed ? (
      <p class="block-failed" role="note">
        {t("blockFailed")}
      </p>
    ) : (
      this.props.children
    );
  }
}
