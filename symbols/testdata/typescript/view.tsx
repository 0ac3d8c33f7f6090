export function TokenBadge(props: { token: string }) {
  return <span>{props.token}</span>;
}

export class Panel {
  render() {
    return <div />;
  }
}
