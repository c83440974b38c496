"""`eagle4 container build IMAGE` / `eagle4 container run IMAGE -- CMD...` (pinned images, docker SDK)."""

from __future__ import annotations

from eagle4.containers import IMAGES, build, run


def cmd_build(args) -> int:
    b = build(args.image)
    print(f"{b.tag} {b.image_id} ({'reused' if b.reused else 'built'})")
    return 0


def cmd_run(args) -> int:
    command = args.cmd[1:] if args.cmd and args.cmd[0] == "--" else args.cmd
    if not command:
        command = ["python", "-m", "pytest", "-m", "parity", "-n", "2"]
    return run(args.image, command, gpus=args.gpus or None)


def register(sub) -> None:
    p = sub.add_parser("container", help="build the pinned images and run suites inside them")
    s = p.add_subparsers(dest="container_cmd", required=True)
    b = s.add_parser("build", help="build (or reuse) an image")
    b.add_argument("image", choices=IMAGES)
    b.set_defaults(func=cmd_build)
    r = s.add_parser("run", help="run a command in an image with the checkout mounted (default: the parity suite)")
    r.add_argument("image", choices=IMAGES)
    r.add_argument("--gpus", action="store_true", help="pass all GPUs (default for cuda-h100)")
    r.add_argument("cmd", nargs="...", help="-- then the command")
    r.set_defaults(func=cmd_run)
