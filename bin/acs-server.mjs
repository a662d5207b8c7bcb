#!/usr/bin/env node
// `acs-server`: checks the Node.js version, then runs the program (see launch.mjs).
import { launch } from './launch.mjs';

launch('acs-server');
