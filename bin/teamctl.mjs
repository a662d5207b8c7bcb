#!/usr/bin/env node
// `teamctl`: checks the Node.js version, then runs the program (see launch.mjs).
import { launch } from './launch.mjs';

launch('teamctl');
